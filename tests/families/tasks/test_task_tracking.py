"""The task judge stage's run log and MLflow judge run (the simulated route here; the openai
route in tests/judge/engines/openai/test_openai_task_tracking.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from mlflow_store import run_metrics, run_tags
from task_project import task_project

from stylisticbias.families.tasks.judge.tracking import task_run_log, task_summary
from stylisticbias.judge.run import run_judge
from stylisticbias.spec.parse import config_from_params
from stylisticbias.tracking import JUDGE_METRICS


def test_summary_counts_records_faces_and_speeds() -> None:
    rec = pd.DataFrame(
        {
            "task_id": [1, 1, 11],
            "unit": ["i0", "i0", "f1"],
            "image_ids": ["a|b", "b|a", "a"],
            "outcome": ["first", "invalid", "c"],
            "undecided": [0.0, 0.5, 0.1],
        }
    )
    s = task_summary(
        rec,
        "m",
        {"engine": {"name": "hf", "decoding": "exact"}},
        units_judged=2,
        prompts_judged=3,
        seconds=1.5,
    )
    assert (s["n_records"], s["n_tasks"], s["n_images"], s["n_units"]) == (3, 2, 2, 2)
    assert s["invalid_rate"] == pytest.approx(1 / 3) and s["undecided_mass"] == pytest.approx(0.2)
    assert s["images_per_s"] == pytest.approx(2 / 1.5) and s["prompts_per_s"] == 2.0
    assert s["simulated"] is False and s["engine"] == "hf"
    idle = task_summary(rec, "m", {}, units_judged=0, prompts_judged=0, seconds=0.2)
    assert idle["seconds"] is None and idle["images_per_s"] is None


def test_simulated_route_logs_a_judge_run(tmp_path: Path) -> None:
    params = task_project(tmp_path, "vignette-demo", "simulated-weak", 8)
    db = tmp_path / "mlflow.db"
    params["tracking"] = {
        **params["tracking"],
        "enabled": True,
        "experiment_name": "t",
        "tracking_uri": f"sqlite:///{db}",
    }
    out = run_judge("simulated-weak", config_from_params(params), progress=False)
    log = json.loads(task_run_log(out.parent).read_text())
    rec = pd.read_parquet(out)
    assert log["n_records"] == len(rec) and log["simulated"] is True and log["mlflow_run_id"]
    tags = run_tags(db)[log["mlflow_run_id"]]
    metrics = run_metrics(db, log["mlflow_run_id"])
    with sqlite3.connect(db) as con:
        params_ = dict(
            con.execute("SELECT key, value FROM params WHERE run_uuid = ?", (log["mlflow_run_id"],))
        )
    assert tags["mlflow.runName"] == "judge/simulated-weak" and tags["simulated"] == "true"
    assert set(metrics) <= set(JUDGE_METRICS) and metrics["n_records"] == len(rec)
    assert metrics["invalid_rate"] == pytest.approx((rec["outcome"] == "invalid").mean())
    assert params_["protocol"] == "vignette" and params_["engine"] == "simulated"


def test_tracking_failure_keeps_the_records(tmp_path: Path, caplog) -> None:
    """An unusable store is a warning: the records and the run log are written."""
    params = task_project(tmp_path, "reflect-demo", "simulated-strong", 8, ["judge.scenarios=[11]"])
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the store's directory should be
    params["tracking"] = {
        **params["tracking"],
        "enabled": True,
        "max_retries": 0,
        "tracking_uri": f"sqlite:///{blocked}/sub/mlflow.db",
    }
    with caplog.at_level("WARNING"):
        out = run_judge("simulated-strong", config_from_params(params), progress=False)
    assert out.is_file() and "MLflow logging failed" in caplog.text
    assert "mlflow_run_id" not in json.loads(task_run_log(out.parent).read_text())
