"""MLflow logging of the report: per-model runs, comparison run, dataset input, sweeps."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import mlflow
import pytest

from stylisticbias.config import project_root
from stylisticbias.report.mlflow_log import (
    SWEEP_ENV,
    flatten_metrics,
    resolve_tracking_uri,
    sweep_id,
)
from stylisticbias.report.run import build_report
from stylisticbias.report.track import RUNS_FILE, run_log_path, track_report


def test_flatten_metrics_gives_stable_dotted_names():
    flat = flatten_metrics(
        {
            "vs": {"age": 0.1},
            "sbs": {"category": {"fashion": 0.05}},
            "pareto.n_variations_80": 15,
            "note": "x",
            "bad": float("nan"),
        }
    )
    assert flat == {"vs.age": 0.1, "sbs.category.fashion": 0.05, "pareto.n_variations_80": 15.0}


def test_relative_sqlite_uri_is_anchored_at_the_dvc_root(tmp_path):
    env = {"DVC_ROOT": str(tmp_path)}
    assert resolve_tracking_uri("sqlite:///mlflow.db", env) == f"sqlite:///{tmp_path}/mlflow.db"
    assert resolve_tracking_uri("sqlite:////abs/m.db", env) == "sqlite:////abs/m.db"
    assert resolve_tracking_uri("http://127.0.0.1:5000", env) == "http://127.0.0.1:5000"


def test_sweep_id_from_env_and_dvc_queue():
    assert sweep_id({}) is None
    assert sweep_id({SWEEP_ENV: "grid-1"}) == "grid-1"
    env = {"DVC_EXP_NAME": "exp-abc", "DVC_EXP_BASELINE_REV": "0123456789abcdef0123"}
    assert sweep_id(env) == "dvc-exp:0123456789ab"


@pytest.fixture
def git_repo(tmp_path: Path) -> str:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=tmp_path, check=True)
    out = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_runs_per_model_comparison_dataset_and_sweep(
    tmp_path, analysis_output, git_repo, monkeypatch
):
    params = analysis_output(["simulated-strong", "simulated-weak"], simulated=True)
    shutil.copytree(project_root() / "conf" / "reference", tmp_path / "conf" / "reference")
    monkeypatch.setenv(SWEEP_ENV, "sweep-test")
    monkeypatch.delenv("STYLISTICBIAS_PARENT_RUN_ID", raising=False)
    for seed in (0, 1):  # a simulated 2-run sweep
        params["seed"] = seed
        build_report(params, tmp_path)
        track_report(params, tmp_path)

    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    exp = mlflow.get_experiment_by_name(params["tracking"]["experiment_name"])
    runs = mlflow.search_runs([exp.experiment_id])
    kind = runs["tags.stylisticbias.run_kind"]
    parents = runs[kind == "sweep"]
    assert len(parents) == 1
    parent_id = parents.iloc[0]["run_id"]
    children = runs[kind != "sweep"]
    assert len(children) == 2 * 3  # (2 models + comparison) x 2 sweep members
    assert (children["tags.mlflow.parentRunId"] == parent_id).all()
    assert sorted(children["params.seed"].unique()) == ["0", "1"]

    models = children[children["tags.stylisticbias.run_kind"] == "model"]
    assert sorted(models["tags.model"]) == sorted(["simulated-strong", "simulated-weak"] * 2)
    for col in (
        "metrics.vs.age",
        "metrics.sbs.overall",
        "metrics.pareto.n_variations_80",
        "metrics.sbs.category.fashion",
    ):
        assert models[col].notna().all(), col
    assert (models["tags.git_commit"] == git_repo).all()
    assert (models["tags.mlflow.source.git.commit"] == git_repo).all()
    assert (models["tags.simulated"] == "true").all()

    monkeypatch.chdir(tmp_path)  # artifact paths are relative to the store's directory
    run = mlflow.get_run(models.iloc[0]["run_id"])
    (ds,) = run.inputs.dataset_inputs
    assert ds.dataset.name.startswith("scores/simulated-")
    assert len(ds.dataset.digest) == 32
    arts = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "tables")}
    assert "tables/sbs_by_scenario.json" in arts

    comp = children[children["tags.stylisticbias.run_kind"] == "comparison"]
    assert len(comp) == 2 and (comp["metrics.n_models"] == 2).all()
    figs = {a.path for a in mlflow.MlflowClient().list_artifacts(comp.iloc[0]["run_id"], "figures")}
    assert "figures/fig8_model_pair.png" in figs
    assert "figures/fig5_abs_sbs_by_scenario_category_model.png" in figs
    # the stage's output says what was logged (same on every machine); the run log, the runs
    record = json.loads((tmp_path / RUNS_FILE).read_text())
    assert record["enabled"] is True and "runs" not in record and "date" not in record
    assert len(record["report_digest"]) == 32
    runs = json.loads(run_log_path(tmp_path / RUNS_FILE).read_text())
    assert runs["runs"]["comparison"] in set(comp["run_id"])
    assert runs["runs"]["sweep"] == parent_id


def test_report_stage_alone_logs_nothing(tmp_path, analysis_output):
    # logging is the track stage's job: a fresh clone has the report files but not the runs
    params = analysis_output(["simulated-strong"], simulated=True)
    shutil.copytree(project_root() / "conf" / "reference", tmp_path / "conf" / "reference")
    build_report(params, tmp_path)
    assert not (tmp_path / "mlflow.db").exists()
    first = (tmp_path / RUNS_FILE).read_bytes() if (tmp_path / RUNS_FILE).exists() else None
    track_report(params, tmp_path)
    assert (tmp_path / "mlflow.db").exists() and first is None
    out = (tmp_path / RUNS_FILE).read_bytes()
    track_report(params, tmp_path)  # logging again: new runs, the same stage output
    assert (tmp_path / RUNS_FILE).read_bytes() == out
    assert len(json.loads(run_log_path(tmp_path / RUNS_FILE).read_text())["runs"]) == 2


def test_tracking_disabled_logs_nothing(tmp_path, analysis_output):
    params = analysis_output(["simulated-strong"], simulated=True)
    params["tracking"]["enabled"] = False
    shutil.copytree(project_root() / "conf" / "reference", tmp_path / "conf" / "reference")
    build_report(params, tmp_path)
    track_report(params, tmp_path)
    assert not (tmp_path / "mlflow.db").exists()
    assert json.loads((tmp_path / RUNS_FILE).read_text())["enabled"] is False
