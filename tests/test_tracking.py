"""MLflow logging of judge runs, queried back from a temporary sqlite store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stylisticbias.tracking import (
    EXPERIMENT_KIND_TAG,
    PARENT_ENV,
    ensure_experiment,
    flatten_params,
    log_judge_run,
    log_params,
    param_value,
    run_url,
    runs_url,
    start_run,
    tracking_enabled,
    tracking_spec,
)

mlflow = pytest.importorskip("mlflow")


def _params(tmp_path: Path, enabled: bool = True) -> dict:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return {"tracking": {"enabled": enabled, "tracking_uri": uri, "experiment_name": "t"}}


SUMMARY = {
    "model": "simulated-strong",
    "engine": "simulated",
    "simulated": True,
    "images_per_s": 100.0,
    "prompts_per_s": 30000.0,
    "invalid_rate": 0.02,
    "undecided_mass": 0.0,
    "image_tokens_per_image": None,
    "n_images": 10,
    "images_judged": 10,
    "images_resumed": 0,
}
RUN_PARAMS = {
    "model": "simulated-strong",
    "engine": "simulated",
    "decoding": "simulated",
    "temperature": 0.2,
    "orderings": [1, 2, 3, 4],
    "seeds": [1, 2, 3],
}


def test_judge_run_is_logged_and_nested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    params = _params(tmp_path)
    assert tracking_enabled(params)
    with start_run(tracking_spec(params), "sweep") as parent:
        parent_id = parent.info.run_id
    monkeypatch.setenv(PARENT_ENV, parent_id)
    run_id = log_judge_run(tracking_spec(params), RUN_PARAMS, SUMMARY)
    assert run_id
    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    runs = mlflow.search_runs(experiment_names=["t"], filter_string="tags.stage = 'judge'")
    assert len(runs) == 1
    r = runs.iloc[0]
    assert r["params.model"] == "simulated-strong" and r["params.orderings"] == "1,2,3,4"
    assert r["params.seeds"] == "1,2,3" and r["params.temperature"] == "0.2"
    assert r["metrics.images_per_s"] == 100.0 and r["metrics.invalid_rate"] == 0.02
    assert (
        "metrics.image_tokens_per_image" not in runs
        or runs["metrics.image_tokens_per_image"].isna().all()
    )
    assert r["tags.simulated"] == "true" and r["tags.mlflow.parentRunId"] == parent_id
    assert "tags.git_commit" in runs


def test_a_batch_run_logs_every_batch_job_it_billed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider batch jobs of the run log (ids, lines, tokens, cost) reach MLflow: the
    ids as a tag, every job in ``batch_jobs.json``."""
    params = _params(tmp_path)
    jobs = [
        {"batch_id": "batch_a1", "round": 0, "lines": 10, "status": "completed", "cost": 0.5},
        {"batch_id": "batch_b2", "round": 1, "lines": 4, "status": "expired", "cost": 0.1},
    ]
    run_id = log_judge_run(tracking_spec(params), RUN_PARAMS, {**SUMMARY, "batch_jobs": jobs})
    assert run_id
    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    run = mlflow.get_run(run_id)
    assert run.data.tags["batch_ids"] == "batch_a1,batch_b2"
    monkeypatch.chdir(tmp_path)  # the store's artifacts lie beside it (tracking.in_store_dir)
    logged = mlflow.artifacts.load_dict(f"runs:/{run_id}/batch_jobs.json")
    assert logged == {"batch_jobs": jobs}


def test_a_run_that_judged_nothing_logs_nothing(tmp_path: Path) -> None:
    params = _params(tmp_path)
    assert log_judge_run(tracking_spec(params), RUN_PARAMS, SUMMARY)
    resumed = {**SUMMARY, "images_judged": 0, "images_resumed": 10, "images_per_s": None}
    assert log_judge_run(tracking_spec(params), RUN_PARAMS, resumed) is None
    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    assert len(mlflow.search_runs(experiment_names=["t"])) == 1


def test_disabled_tracking_logs_nothing(tmp_path: Path) -> None:
    params = _params(tmp_path, enabled=False)
    assert log_judge_run(tracking_spec(params), RUN_PARAMS, SUMMARY) is None
    with start_run(tracking_spec(params), "x") as run:
        assert run is None
    assert not (tmp_path / "mlflow.db").exists()


def test_experiment_opens_on_its_runs(tmp_path: Path) -> None:
    """The experiment kind tag MLflow's UI reads: set on a new experiment and on an older one
    without it; a kind chosen in the UI is kept."""
    params = _params(tmp_path)
    spec = tracking_spec(params)
    exp_id = ensure_experiment(spec)
    client = mlflow.MlflowClient(spec.tracking_uri)
    assert client.get_experiment(exp_id).tags[EXPERIMENT_KIND_TAG] == "custom_model_development"
    old = client.create_experiment("made-before")  # as earlier versions created it: no tag
    assert EXPERIMENT_KIND_TAG not in client.get_experiment(old).tags
    ensure_experiment(
        tracking_spec({"tracking": {**params["tracking"], "experiment_name": "made-before"}})
    )
    assert client.get_experiment(old).tags[EXPERIMENT_KIND_TAG] == "custom_model_development"
    chosen = client.create_experiment("chosen", tags={EXPERIMENT_KIND_TAG: "genai_development"})
    ensure_experiment(
        tracking_spec({"tracking": {**params["tracking"], "experiment_name": "chosen"}})
    )
    assert client.get_experiment(chosen).tags[EXPERIMENT_KIND_TAG] == "genai_development"
    # the UI address of the Runs tab (MLflow 3.17's UI needs workflowType in the address)
    url = runs_url(spec, exp_id)
    assert url == f"http://127.0.0.1:5000/#/experiments/{exp_id}/runs?workflowType=machine_learning"
    remote = tracking_spec({"tracking": {"enabled": True, "tracking_uri": "https://ml.example/"}})
    assert runs_url(remote, "7").startswith("https://ml.example/#/experiments/7/runs?")
    # a run's page, in the classic view too (without the parameter MLflow 3.17's UI shows it
    # under its GenAI "Evaluations"; checked against `mlflow ui` in headless Chromium)
    page = run_url(spec, exp_id, "abc123")
    assert page == (
        f"http://127.0.0.1:5000/#/experiments/{exp_id}/runs/abc123?workflowType=machine_learning"
    )
    assert run_url(remote, "7", "r1") == (
        "https://ml.example/#/experiments/7/runs/r1?workflowType=machine_learning"
    )


def test_params_are_flat_and_typed(tmp_path: Path) -> None:
    params = _params(tmp_path)
    nested = {
        "n": 100,
        "np_n": np.int64(7),
        "x": 0.05,
        "whole": 2.0,
        "flag": True,
        "np_flag": np.bool_(False),
        "none": None,
        "seeds": [1, 2, 3],
        "mixed": [1, 0.5, True],
        "name": "procedural",
        "analysis": {"bootstrap": {"n_resamples": 1000, "ci": 0.95}},
        "empty": {},
    }
    with start_run(tracking_spec(params), "p"):
        log_params(nested)
        run_id = mlflow.active_run().info.run_id
    got = mlflow.MlflowClient(params["tracking"]["tracking_uri"]).get_run(run_id).data.params
    assert got == {
        "n": "100",
        "np_n": "7",
        "x": "0.05",
        "whole": "2.0",
        "flag": "true",
        "np_flag": "false",
        "none": "null",
        "seeds": "1,2,3",
        "mixed": "1,0.5,true",
        "name": "procedural",
        "analysis.bootstrap.n_resamples": "1000",
        "analysis.bootstrap.ci": "0.95",
    }
    assert param_value(100.0) == "100.0" and param_value(1e-09) == "1e-09"
    assert flatten_params({"a": {"b": {"c": [1, 2]}}}) == {"a.b.c": "1,2"}
