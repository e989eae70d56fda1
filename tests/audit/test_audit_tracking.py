"""The audit in MLflow (the track stage): one parent run per judged model holding every
protocol's headline and the model's bias card at its artifact root, one child run per
protocol under it, each protocol's comparison run (and SODA's) under one cross-model audit run;
a rerun replaces the earlier runs; MLflow's compare view of two model parents lists their
common artifacts (headless Chromium against ``mlflow server``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
import pytest
from audit_plants import MODELS, PROTOCOLS, configs, plant

from stylisticbias.audit.stage import write_audit
from stylisticbias.report.audit_runs import AUDIT_KIND, CARD_ARTIFACT, MODEL_KIND
from stylisticbias.report.family_runs import Headline, RunLayout, log_family_report
from stylisticbias.report.mlflow_log import HEADLINE_ARTIFACT
from stylisticbias.report.track import RUNS_FILE, track_report
from stylisticbias.tracking import child_runs, start_run
from stylisticbias.tracking.grouping import TAG_KIND
from stylisticbias.tracking.runs import PARENT_ENV
from stylisticbias_dev.headless import browser, open_page

PARENT = "mlflow.parentRunId"


def _tables(tables_dir: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_csv(p) for p in sorted(tables_dir.glob("*.csv"))}


#: every protocol's runs, as the families log them (the shared family logger), whatever the
#: planted tables hold
LAYOUT = RunLayout(
    family="test",
    headline=(Headline("win_rate.max", "reflect_win_rates", "win_rate", "max"),),
    flat=(),
    read_tables=_tables,
)


class _Family:
    def hook(self, stage: str) -> Any:
        assert stage == "track"

        def track(config: Any, root: Path, bench: Any, digest: str, run_log: dict) -> None:
            reports = root / str(config.paths.reports)
            run_log["runs"] = log_family_report(config, reports, LAYOUT, digest)

        return track


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any, dict]]:
    """The planted reports' audit, tracked once for the module (its tests only read the store,
    or rerun the stage, which leaves it as it was)."""
    root = tmp_path_factory.mktemp("tracked")
    plant(root)
    uri = f"sqlite:///{root}/mlflow.db"
    config, jobs = configs(
        ["tracking.enabled=true", f"tracking.tracking_uri={uri}", "tracking.experiment_name=a"]
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # the store's artifact root (./mlruns)
        mp.delenv(PARENT_ENV, raising=False)
        mp.setattr("stylisticbias.report.track.family_of", lambda bench: _Family())
        write_audit(config, root, jobs)
        track_report(config, root, jobs)
        yield root, mlflow.MlflowClient(uri), {"config": config, "jobs": jobs}


def _active(client: mlflow.MlflowClient) -> list[Any]:
    exp = client.get_experiment_by_name("a")
    return client.search_runs([exp.experiment_id], max_results=1000)


def test_a_parent_per_model_with_a_child_per_protocol(tracked) -> None:
    root, client, _ = tracked
    runs = _active(client)
    kinds = {r.info.run_id: r.data.tags.get(TAG_KIND) for r in runs}
    parents = {r.data.tags["model"]: r for r in runs if kinds[r.info.run_id] == MODEL_KIND}
    assert sorted(parents) == sorted(MODELS)
    findings = json.loads((root / "reports/audit/findings.json").read_text())
    for m, parent in parents.items():
        pid = parent.info.run_id
        assert PARENT not in parent.data.tags  # a top-level run of the experiment
        children = [r for r in runs if r.data.tags.get(PARENT) == pid]
        names = sorted(r.info.run_name for r in children)
        assert names == sorted(f"{p}/{m}" for p in PROTOCOLS)
        assert all(r.data.tags["model"] == m and r.data.tags[TAG_KIND] == "model" for r in children)
        top = sorted(a.path for a in client.list_artifacts(pid))
        assert {HEADLINE_ARTIFACT, CARD_ARTIFACT} <= set(top)
        dst = root / "dl" / m
        dst.mkdir(parents=True)
        head = json.loads(
            Path(client.download_artifacts(pid, HEADLINE_ARTIFACT, str(dst))).read_text()
        )
        assert head["protocols"] == findings["models"][m]["protocols"]
        card = Path(client.download_artifacts(pid, CARD_ARTIFACT, str(dst))).read_text()
        assert card == (root / f"reports/audit/{m}.md").read_text()
        sbs = findings["models"][m]["protocols"]["stylisticbias"][0]
        assert parent.data.metrics["stylisticbias.sbs"] == sbs["value"]
        assert parent.data.metrics["stylisticbias.sbs.ci_low"] == sbs["ci_low"]
    (audit,) = [r for r in runs if kinds[r.info.run_id] == AUDIT_KIND]
    under = sorted(r.info.run_name for r in runs if r.data.tags.get(PARENT) == audit.info.run_id)
    assert under == sorted(f"{p}/comparison" for p in PROTOCOLS)
    top = {a.path for a in client.list_artifacts(audit.info.run_id)}
    assert {"README.md", "leaderboard.csv", "leaderboard.html"} <= top


@pytest.mark.slow
def test_a_rerun_replaces_the_runs_and_the_record_is_stable(tracked) -> None:
    root, client, ctx = tracked
    first = sorted(r.info.run_name for r in _active(client))
    record = (root / RUNS_FILE).read_bytes()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setattr("stylisticbias.report.track.family_of", lambda bench: _Family())
        track_report(ctx["config"], root, ctx["jobs"])
    assert sorted(r.info.run_name for r in _active(client)) == first
    assert len(first) == len(MODELS) * (1 + len(PROTOCOLS)) + 1 + len(PROTOCOLS)
    assert (root / RUNS_FILE).read_bytes() == record
    doc = json.loads(record)
    assert set(doc["protocols"]) == set(PROTOCOLS) and doc["audit_digest"]
    assert "date" not in doc and "runs" not in doc


def test_child_runs_sends_each_model_to_its_parent(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(PARENT_ENV, raising=False)
    config, _ = configs(
        [
            "tracking.enabled=true",
            f"tracking.tracking_uri=sqlite:///{tmp_path}/m.db",
            "tracking.experiment_name=c",
        ]
    )
    spec = config.tracking
    ids = {}
    for name in ("pa", "pb", "other"):
        with start_run(spec, run_name=name) as run:
            ids[name] = run.info.run_id
    with child_runs({"a": ids["pa"], "b": ids["pb"]}, ids["other"], "proto"):
        for model in ("a", "b", "all"):
            with start_run(spec, run_name=model, tags={"model": model}) as run:
                ids[model] = run.info.run_id
    with start_run(spec, run_name="free", tags={"model": "a"}) as run:  # outside: no parent
        ids["free"] = run.info.run_id
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path}/m.db")
    got = {k: client.get_run(ids[k]).data.tags.get(PARENT) for k in ("a", "b", "all", "free")}
    assert got == {"a": ids["pa"], "b": ids["pb"], "all": ids["other"], "free": None}
    assert client.get_run(ids["a"]).info.run_name == "proto/a"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: the compare page's text once it has drawn its artifacts section
_ARTIFACTS_SHOWN = (
    "document.body.innerText.includes('{a}') && document.body.innerText.includes('{b}')"
)


@pytest.mark.slow
@pytest.mark.skipif(browser() is None, reason="no Chromium on PATH (apt-get install -y chromium)")
def test_the_compare_view_lines_up_two_models_common_artifacts(tracked) -> None:
    root, client, _ = tracked
    runs = _active(client)
    pair = [r.info.run_id for r in runs if r.data.tags.get(TAG_KIND) == MODEL_KIND]
    exp_id = client.get_experiment_by_name("a").experiment_id
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{root}/mlflow.db",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        start_new_session=True,
    )
    try:
        end = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > end or server.poll() is not None:
                    pytest.fail("mlflow server did not start")
                time.sleep(0.5)
        query = urllib.parse.urlencode(
            {"runs": json.dumps(pair), "experiments": json.dumps([exp_id])}
        )
        url = f"http://127.0.0.1:{port}/#/compare-runs?{query}"
        blank = root / "blank.html"
        blank.write_text("<!DOCTYPE html><title>blank</title>")
        with open_page(blank) as page:
            page.goto(url, "document.readyState === 'complete'")
            page.wait(_ARTIFACTS_SHOWN.format(a=HEADLINE_ARTIFACT, b=CARD_ARTIFACT), 90)
            text = page.eval("document.body.innerText")
        assert "No common artifacts" not in text
    finally:
        os.killpg(server.pid, 15)
        server.wait(30)
