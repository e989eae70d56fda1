"""MLflow logging of judge runs, queried back from a temporary sqlite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from stylisticbias.tracking import PARENT_ENV, log_judge_run, start_run, tracking_enabled

mlflow = pytest.importorskip("mlflow")


def _params(tmp_path: Path, enabled: bool = True) -> dict:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return {"tracking": {"enabled": enabled, "tracking_uri": uri, "experiment_name": "t"}}


SUMMARY = {"model": "simulated-strong", "engine": "simulated", "simulated": True,
           "images_per_s": 100.0, "prompts_per_s": 30000.0, "invalid_rate": 0.02,
           "undecided_mass": 0.0, "image_tokens_per_image": None, "n_images": 10}  # fmt: skip
RUN_PARAMS = {"model": "simulated-strong", "engine": "simulated", "decoding": "simulated",
              "temperature": 0.2, "orderings": [1, 2, 3, 4], "seeds": [1, 2, 3]}  # fmt: skip


def test_judge_run_is_logged_and_nested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    params = _params(tmp_path)
    assert tracking_enabled(params)
    with start_run(params, "sweep") as parent:
        parent_id = parent.info.run_id
    monkeypatch.setenv(PARENT_ENV, parent_id)
    run_id = log_judge_run(params, RUN_PARAMS, SUMMARY)
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


def test_disabled_tracking_logs_nothing(tmp_path: Path) -> None:
    params = _params(tmp_path, enabled=False)
    assert log_judge_run(params, RUN_PARAMS, SUMMARY) is None
    with start_run(params, "x") as run:
        assert run is None
    assert not (tmp_path / "mlflow.db").exists()
