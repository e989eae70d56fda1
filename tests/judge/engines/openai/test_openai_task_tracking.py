"""A task protocol judged by the ``openai`` engine (the loopback server with planted
log-probabilities) is tracked like a simulated judge's: the judge stage logs a ``judge/<model>``
run (its invalid rate and request counters), and after analyze and report the track stage logs
the model's run (its headline with intervals, its tables and figures) and a comparison run, in a
real SQLite store. A rerun that judges nothing opens no judge run."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from mlflow_store import run_artifacts, run_metrics, run_tags
from servers import free_port, start_loopback, stop
from task_project import task_project

from stylisticbias.analysis.run import run_analysis
from stylisticbias.families.tasks.report.mlflow_runs import task_headline_metrics
from stylisticbias.families.tasks.report.track import read_task_tables
from stylisticbias.judge.run import run_judge
from stylisticbias.report.mlflow_log import MAX_RUN_METRICS
from stylisticbias.report.run import build_report
from stylisticbias.report.track import track_report
from stylisticbias.spec.parse import config_from_params

MODEL = "tiny-llava-next-vllm"
PROBS = {"A": 0.35, "B": 0.25, "C": 0.2, "D": 0.1, "E": 0.05, "F": 0.03, "maybe": 0.02}
PLANTED_LOGPROBS = {"": [[t, math.log(p)] for t, p in PROBS.items()], "*": [["</s>", 0.0]]}


@pytest.fixture
def project(tmp_path: Path) -> Any:
    """Params of reflect-demo (2AFC + salary MCQ) judged by the openai engine on 8 faces,
    tracked to ``tmp_path/mlflow.db``; the loopback server stopped afterwards."""
    saved = os.environ.get("STYLISTICBIAS_LOOPBACK_URL")
    root = tmp_path / "proj"
    root.mkdir()
    port = free_port()
    proc = start_loopback(
        port,
        faults={"planted_logprobs": PLANTED_LOGPROBS},
        log=tmp_path / "server.jsonl",
        with_model=False,
    )
    os.environ["STYLISTICBIAS_LOOPBACK_URL"] = f"http://127.0.0.1:{port}/v1"
    params = task_project(
        root,
        "reflect-demo",
        MODEL,
        8,
        [
            "judge.scenarios=[1,11]",
            "judge.temperature=1.0",
            "analysis.bootstrap.n_resamples=200",
            f"models.{MODEL}.engine.decoding=sampled",
            f"models.{MODEL}.engine.cache={tmp_path / 'cache.sqlite'}",
            f"models.{MODEL}.engine.progress=false",
        ],
    )
    params["paths"].update(reports=str(root / "reports"), analysis_cache=str(root / "cache"))
    params["tracking"] = {
        **params["tracking"],
        "enabled": True,
        "experiment_name": "tasks",
        "tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}",
    }
    yield root, params
    stop(proc)
    if saved is None:
        os.environ.pop("STYLISTICBIAS_LOOPBACK_URL", None)
    else:
        os.environ["STYLISTICBIAS_LOOPBACK_URL"] = saved


def test_openai_task_runs_are_tracked(project: Any, tmp_path: Path) -> None:
    root, params = project
    db = tmp_path / "mlflow.db"
    config = config_from_params(params)
    out = run_judge(MODEL, config, progress=False)
    judge = [r for r, t in run_tags(db).items() if t.get("stage") == "judge"]
    assert len(judge) == 1
    tags = run_tags(db)[judge[0]]
    assert tags["mlflow.runName"] == f"judge/{MODEL}" and tags["engine"] == "openai"
    assert tags["simulated"] == "false"
    m = run_metrics(db, judge[0])
    n = len(pd.read_parquet(out))
    assert m["n_records"] == n and m["n_images"] == 8
    assert 0 <= m["invalid_rate"] <= 1 and m["api_requests"] > 0
    # a rerun judges nothing (every batch resumed): no second judge run
    run_judge(MODEL, config, progress=False)
    assert len([t for t in run_tags(db).values() if t.get("stage") == "judge"]) == 1

    run_analysis(config)
    build_report(config, root)
    track_report(config, root)
    runs = run_tags(db)
    model_runs = [r for r, t in runs.items() if t.get("stylisticbias.run_kind") == "model"]
    assert len(model_runs) == 1
    tags = runs[model_runs[0]]
    assert tags["model"] == MODEL and tags["simulated"] == "false" and tags["engine"] == "openai"
    got = run_metrics(db, model_runs[0])
    want = task_headline_metrics(read_task_tables(root / "reports" / "tables"), MODEL)
    assert got == pytest.approx(want) and 0 < len(got) <= MAX_RUN_METRICS
    assert got["win_rate.max.ci_low"] <= got["win_rate.max"] <= got["win_rate.max.ci_high"]
    assert "mcq_gap.max_abs" in got
    files = run_artifacts(db, model_runs[0])
    assert {
        "tables/reflect_win_rates.json",
        "tables/metrics_all.json",
        "figures/reflect_win_matrix.png",
    } <= files
    assert [t for t in runs.values() if t.get("stylisticbias.run_kind") == "comparison"]
