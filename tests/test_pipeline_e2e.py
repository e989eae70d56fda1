"""End to end through DVC on a copy of the project: every experiment of ``conf/experiment/``
(found by glob, not a hand list) through `configure compose experiment=<name> && dvc repro`,
then a second `dvc repro` that runs nothing but ``check``. Each protocol an experiment runs
writes its own folders (data/<protocol>/, reports/<protocol>/; the default ``demo`` runs all
five) and the audit writes reports/audit/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import yaml

from stylisticbias.config import ROOT, load_group_option
from stylisticbias.protocols import chosen, judged
from stylisticbias.report.mlflow_log import TAG_KIND
from stylisticbias.score_store import read_model_scores
from stylisticbias_dev import tiny
from stylisticbias_dev.project_copy import copy_project


def _copy_project(dest: Path) -> Path:
    """Copy the working tree's tracked and unignored files into a fresh git + DVC repository."""
    return copy_project(ROOT, dest)


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def _repro(project: Path, *experiment: str) -> str:
    env = _env()
    subprocess.run(
        [sys.executable, "-m", "stylisticbias.configure", "compose", *experiment],
        cwd=project,
        check=True,
        env=env,
    )
    proc = subprocess.run(["dvc", "repro"], cwd=project, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _repro_again(project: Path) -> list[str]:
    """The stages a second ``dvc repro`` runs: ``check`` only (it runs on every repro and
    rewrites data/config/ with the same bytes, so nothing after it re-runs)."""
    proc = subprocess.run(["dvc", "repro"], cwd=project, env=_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [ln.split("'")[1] for ln in proc.stdout.splitlines() if ln.startswith("Running stage '")]


EXPERIMENTS = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))

#: what an experiment needs beyond its file to run offline on two cores: ``paper`` judges six
#: hub checkpoints (no weights can be fetched here) on 500 faces, so it runs with the simulated
#: judges on a few faces -- its protocol, scenarios, seeds and analysis settings are its own
SHRINK: dict[str, tuple[str, ...]] = {
    "paper": ("model=[simulated-strong,simulated-weak]", "faces.n=12"),
}


def _protocols(project: Path) -> tuple[list[str], list[str]]:
    """(every protocol the composed experiment runs, the judged ones among them)."""
    view = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    return chosen(view), judged(view)


def _check_smoke(project: Path) -> None:
    data = project / "data/stylisticbias"
    j = pd.read_parquet(data / "judgments/tiny-llava-next/judgments.parquet")
    assert set(j["engine"]) == {"hf"} and set(j["decoding"]) == {"exact"}
    assert not j["simulated"].any()
    assert j.groupby("image_id").size().eq(4 * 4).all()  # 4 scenarios x 4 orderings
    s = read_model_scores(data / "scores", "tiny-llava-next")
    assert s["phi"].notna().all() and len(s) == j["image_id"].nunique() * 4
    report = (project / "reports/stylisticbias/README.md").read_text()
    assert "tiny-llava-next" in report and "SIMULATED" not in report.splitlines()[0]


def _check_stylisticbias(project: Path) -> None:
    report = (project / "reports/stylisticbias/README.md").read_text()
    assert report.splitlines()[0].endswith("SIMULATED data")
    assert (project / "reports/stylisticbias/calibration.json").exists()


def _task_check(protocol: str, tables: set[str]) -> Callable[[Path], None]:
    def check(project: Path) -> None:
        listed = subprocess.run(
            ["dvc", "stage", "list", "--name-only"],
            cwd=project,
            env=_env(),
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        locked = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
        models = ["simulated-strong", "simulated-weak"]
        assert {f"judge@{protocol}-{m}" for m in models} <= set(listed)  # judge@PROTOCOL-MODEL
        assert set(listed) <= set(locked), set(listed) - set(locked)  # every stage ran
        for m in models:
            rec = pd.read_parquet(project / f"data/{protocol}/judgments/{m}/task_records.parquet")
            assert {"reason", "undecided"} <= set(rec.columns) and len(rec) > 0
        tables_dir = project / "reports" / protocol / "tables"
        written = {p.stem for p in tables_dir.glob("*.csv")}
        assert tables <= written, tables - written
        assert (tables_dir / "task_report.md").is_file()

    return check


_check_reflect = _task_check(
    "reflect", {"reflect_win_rates", "reflect_mcq_distribution", "reflect_salary_gaps"}
)
_check_vignette = _task_check(
    "vignette", {"vignette_selection", "vignette_log_odds", "vignette_text_vs_image"}
)


def _check_soda(project: Path) -> None:
    assert (project / "data/soda/audit/metrics.json").is_file()  # paths.soda of the soda job
    record = json.loads((project / "data/tracking/report_runs.json").read_text())
    assert record["soda_digest"], record  # the track stage logged the audit
    client = mlflow.MlflowClient(f"sqlite:///{project / 'mlflow.db'}")
    exp = client.get_experiment_by_name("stylisticbias")
    kinds = {r.data.tags.get(TAG_KIND) for r in client.search_runs([exp.experiment_id])}
    assert "soda" in kinds, kinds


def _check_beauty(project: Path) -> None:
    written = {p.stem for p in (project / "reports/beauty-and-the-bias/tables").glob("*.csv")}
    assert {"paired_group_tests", "paired_variation_bias"} <= written, written


def _check_demo(project: Path) -> None:
    """The default experiment runs every protocol, each into its own folders."""
    assert _protocols(project) == (
        ["stylisticbias", "beauty-and-the-bias", "reflect", "vignette", "soda"],
        ["stylisticbias", "beauty-and-the-bias", "reflect", "vignette"],
    )
    for check in (_check_stylisticbias, _check_beauty, _check_reflect, _check_vignette):
        check(project)
    _check_soda(project)


#: what each experiment's run must have written, beyond a report per judged protocol, the
#: audit and a clean second repro
CHECKS: dict[str, Callable[[Path], None]] = {
    "smoke": _check_smoke,
    "demo": _check_demo,
    "paper": _check_stylisticbias,
    "reflect-demo": _check_reflect,
    "vignette-demo": _check_vignette,
    "soda-demo": _check_soda,
    "beauty-demo": _check_beauty,
}


def test_every_experiment_has_its_end_to_end_checks() -> None:
    """A new experiment file gets its own checks here (it runs end to end either way)."""
    assert sorted(CHECKS) == EXPERIMENTS


@pytest.mark.slow  # one whole dvc repro per experiment file (minutes each; make test-slow)
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_runs_end_to_end(tmp_path: Path, experiment: str) -> None:
    """`configure compose experiment=<name> && dvc repro` runs every stage of the DAG offline and
    writes the report; a second repro runs only ``check``."""
    project = _copy_project(tmp_path / "proj")
    if experiment == "smoke":
        cfg = load_group_option("model", "tiny-llava-next")  # the judge never builds checkpoints
        tiny.ensure_built(cfg["local_build"], project / cfg["hub_id"])
    _repro(project, f"experiment={experiment}", *SHRINK.get(experiment, ()))
    run, judged_ = _protocols(project)
    assert run, "the experiment runs no protocol"
    for protocol in judged_:  # each judged protocol's report in its own folder
        assert (project / "reports" / protocol / "README.md").is_file(), protocol
    assert (project / "reports/audit/README.md").is_file()  # every protocol's findings
    CHECKS.get(experiment, lambda _p: None)(project)
    assert _repro_again(project) == ["check"]
