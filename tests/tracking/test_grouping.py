"""Runs of DVC experiments in MLflow: judge runs nest under their baseline's parent run, named
after the experiment (a temporary sqlite store); DVC names the experiment in its environment."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from stylisticbias.tracking import PARENT_ENV, ensure_experiment, log_judge_run, tracking_spec
from stylisticbias.tracking.grouping import (
    EXP_BASELINE_ENV,
    EXP_NAME_ENV,
    SWEEP_ENV,
    TAG_KIND,
    TAG_SWEEP,
    find_or_create_parent,
    sweep_id,
)
from stylisticbias_dev.project_copy import tool_env

mlflow = pytest.importorskip("mlflow")

SUMMARY = {
    "model": "simulated-weak",
    "engine": "simulated",
    "simulated": True,
    "images_per_s": 50.0,
    "invalid_rate": 0.05,
    "n_images": 4,
    "images_judged": 4,
}
BASELINE = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    for var in (PARENT_ENV, SWEEP_ENV, EXP_NAME_ENV, EXP_BASELINE_ENV):
        monkeypatch.delenv(var, raising=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return {"tracking": {"enabled": True, "tracking_uri": uri, "experiment_name": "t"}}


def _judge_in(params: dict, monkeypatch: pytest.MonkeyPatch, exp: str, baseline: str) -> dict:
    monkeypatch.setenv(EXP_NAME_ENV, exp)
    monkeypatch.setenv(EXP_BASELINE_ENV, baseline)
    run_id = log_judge_run(tracking_spec(params), {"model": "simulated-weak"}, SUMMARY)
    assert run_id
    run = mlflow.MlflowClient(params["tracking"]["tracking_uri"]).get_run(run_id)
    return {"name": run.info.run_name, **run.data.tags}


def test_judge_runs_of_one_baseline_share_a_parent_named_by_experiment(
    store: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _judge_in(store, monkeypatch, "exp-a", BASELINE)
    b = _judge_in(store, monkeypatch, "exp-b", BASELINE)
    assert a["name"] == "judge/simulated-weak @exp-a" and a["dvc.exp_name"] == "exp-a"
    assert b["name"] == "judge/simulated-weak @exp-b" and b["dvc.exp_name"] == "exp-b"
    parent = a["mlflow.parentRunId"]
    assert parent == b["mlflow.parentRunId"]
    client = mlflow.MlflowClient(store["tracking"]["tracking_uri"])
    tags = client.get_run(parent).data.tags
    assert tags[TAG_KIND] == "sweep" and tags[TAG_SWEEP] == f"dvc-exp:{BASELINE[:12]}"
    # the report's model and comparison runs look the parent up the same way: one parent
    exp_id = ensure_experiment(tracking_spec(store))
    assert find_or_create_parent(exp_id, sweep_id(), {}) == parent
    # another baseline commit: another parent
    c = _judge_in(store, monkeypatch, "exp-c", "f" * 40)
    assert c["mlflow.parentRunId"] != parent


def test_judge_run_outside_an_experiment_has_no_parent(store: dict) -> None:
    run_id = log_judge_run(tracking_spec(store), {"model": "simulated-weak"}, SUMMARY)
    run = mlflow.MlflowClient(store["tracking"]["tracking_uri"]).get_run(str(run_id))
    assert run.info.run_name == "judge/simulated-weak"
    assert "mlflow.parentRunId" not in run.data.tags and "dvc.exp_name" not in run.data.tags


def test_an_explicit_parent_wins_over_the_experiment(
    store: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep driver's parent (``STYLISTICBIAS_PARENT_RUN_ID``) is kept."""
    client = mlflow.MlflowClient(store["tracking"]["tracking_uri"])
    exp_id = ensure_experiment(tracking_spec(store))
    driver = client.create_run(exp_id, run_name="driver").info.run_id
    monkeypatch.setenv(PARENT_ENV, driver)
    assert _judge_in(store, monkeypatch, "exp-a", BASELINE)["mlflow.parentRunId"] == driver


@pytest.mark.slow  # a DVC queue worker: ~30 s
def test_dvc_names_a_queued_experiment_in_its_stages_environment(tmp_path: Path) -> None:
    """``dvc exp run --queue`` + ``dvc queue start``: the stage sees the variables read above."""
    env = tool_env()
    (tmp_path / "params.yaml").write_text("a: 1\n")
    (tmp_path / "mk.py").write_text(
        "import json, os\n"
        f"json.dump({{k: os.environ.get(k) for k in ({EXP_NAME_ENV!r}, {EXP_BASELINE_ENV!r})}},"
        " open('env.json', 'w'))\n"
    )
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  env:\n    cmd: python mk.py\n    params: [a]\n    deps: [mk.py]\n"
        "    outs:\n      - env.json:\n          cache: false\n"
    )

    def run(*cmd: str) -> str:
        out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    git = ("git", "-c", "user.name=t", "-c", "user.email=t@t")
    run("git", "init", "-q")
    run("dvc", "init", "-q")
    run("git", "add", "-A")
    run(*git, "commit", "-qm", "init")
    baseline = run("git", "rev-parse", "HEAD").strip()
    run("dvc", "exp", "run", "--queue", "-n", "queued-1", "-S", "a=2")
    run("dvc", "queue", "start", "-j", "1")
    deadline = time.monotonic() + 600  # a hang guard (the child stalled), never a speed bound
    while "Success" not in (status := run("dvc", "queue", "status")):
        assert "Failed" not in status and time.monotonic() < deadline, status
        time.sleep(2)
    run("dvc", "exp", "apply", "queued-1")
    seen = json.loads((tmp_path / "env.json").read_text())
    assert seen == {EXP_NAME_ENV: "queued-1", EXP_BASELINE_ENV: baseline}
    assert sweep_id(seen) == f"dvc-exp:{baseline[:12]}"
