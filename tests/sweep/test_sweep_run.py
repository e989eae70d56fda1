"""Real multiruns: 2 judge models x 2 seeds on a tiny demo dataset, with the basic and the joblib
launcher; every MLflow run nested under one parent; the comparison run lists all four jobs; a
re-run reuses finished jobs. Each sweep runs the pipeline's stage scripts 4 x 5 times
(minutes on 2 cores), hence slow."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from stylisticbias.sweep.dataset import ensure_dataset
from stylisticbias.sweep.stages import dataset_stages, run_stages
from stylisticbias.sweep.state import SWEEP_FILE

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SIMULATED = ("simulated-strong", "simulated-weak")
#: a simulated judge and a tiny random-weight Qwen3-VL on the hf engine (each model file carries
#: its engine); the tiny checkpoint is built by the test (stylisticbias_dev.tiny)
MIXED = ("simulated-strong", "tiny-qwen3-vl")
SMALL = ["faces.n=2", "variations.scope=evaluated", "judge.scenarios=[1,12,23,25]"]


def jobs(models: tuple[str, ...]) -> set[str]:
    return {f"model={m} judge.seeds=[{s}]" for m in models for s in (1, 2)}


def sweep(tmp: Path, models: tuple[str, ...], *extra: str) -> subprocess.CompletedProcess[str]:
    args = [
        "-m",
        f"model={','.join(models)}",
        "judge.seeds=[1],[2]",
        *SMALL,
        f"tracking.tracking_uri=sqlite:///{tmp}/mlflow.db",
        f"hydra.sweep.dir={tmp}/sw",
        *extra,
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("STYLISTICBIAS_PARENT_RUN_ID", None)
    out = subprocess.run(
        [sys.executable, "-m", "stylisticbias.sweep", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def live_runs(db: Path) -> dict[str, dict[str, Any]]:
    """``{run id: {name, parent, kind, status}}`` of the store's non-deleted runs."""
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT r.run_uuid, r.name, r.status, "
            "(SELECT value FROM tags t WHERE t.run_uuid = r.run_uuid "
            " AND t.key = 'mlflow.parentRunId'), "
            "(SELECT value FROM tags t WHERE t.run_uuid = r.run_uuid "
            " AND t.key = 'stylisticbias.run_kind') "
            "FROM runs r WHERE r.lifecycle_stage = 'active'"
        ).fetchall()
    return {r[0]: {"name": r[1], "status": r[2], "parent": r[3], "kind": r[4]} for r in rows}


def metrics_of(db: Path, run_id: str) -> dict[str, float]:
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT key, value FROM latest_metrics WHERE run_uuid = ?", (run_id,)
        ).fetchall()
    return dict(rows)


def check_tree(tmp: Path, models: tuple[str, ...]) -> dict[str, Any]:
    """Every run nested under one parent; 4 job runs each holding its stages' runs; the
    comparison run lists the 4 jobs (artifact table and per-job metrics)."""
    expected = jobs(models)
    db = tmp / "mlflow.db"
    runs = live_runs(db)
    roots = [i for i, r in runs.items() if not r["parent"]]
    assert len(roots) == 1, [runs[i]["name"] for i in roots]
    parent = roots[0]
    assert runs[parent]["name"].startswith(f"sweep model={','.join(models)} judge.seeds=[1],[2]")
    assert runs[parent]["kind"] == "sweep" and runs[parent]["status"] == "FINISHED"

    def top(i: str) -> str:
        while runs[i]["parent"]:
            i = runs[i]["parent"]
        return i

    assert {top(i) for i in runs} == {parent}
    children = {r["name"]: i for i, r in runs.items() if r["parent"] == parent}
    assert set(children) == {*expected, "comparison"}
    for name in expected:
        job = children[name]
        assert runs[job]["status"] == "FINISHED"
        model = name.split()[0].split("=")[1]
        below = {r["name"] for r in runs.values() if r["parent"] == job}
        assert {f"judge/{model}", model, "comparison"} <= below, below  # judge + track stages
        assert "sbs" in metrics_of(db, job)
    comparison = children["comparison"]
    assert runs[comparison]["kind"] == "sweep-comparison"
    m = metrics_of(db, comparison)
    assert m["n_jobs"] == 4 and m["n_failed"] == 0
    assert len([k for k in m if k.endswith("/sbs")]) == 4
    art = next((tmp / "mlruns").glob(f"*/{comparison}/artifacts"))
    with (art / "jobs.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert {r["name"] for r in table} == expected and {r["status"] for r in table} == {"done"}
    assert {r["run_id"] for r in table} == {children[n] for n in expected}
    jobs_json = json.loads((art / "jobs.json").read_text())
    assert len(pd.DataFrame(jobs_json["data"], columns=jobs_json["columns"])) == 4
    # one dataset build for the four jobs
    assert len([p for p in (tmp / "sw" / "datasets").iterdir() if not p.name.startswith(".")]) == 1
    return {"parent": parent, "comparison": comparison, "jobs": {n: children[n] for n in expected}}


# Each long sweep is a class of its own: ``--dist loadscope`` groups tests by class (else by
# module), so the two long sweeps and the rest of this module can run on different workers.
class TestBasicLauncher:
    def test_basic_launcher_sweep_nests_runs_and_resumes(self, tmp_path: Path) -> None:
        """A simulated judge and a tiny hf model x 2 seeds, one job after another; then again."""
        from stylisticbias_dev.tiny import ensure_model

        ensure_model("tiny-qwen3-vl")
        sweep(tmp_path, MIXED)
        first = check_tree(tmp_path, MIXED)
        logs = {p: p.stat().st_size for p in (tmp_path / "sw").glob("*/stages.log")}
        assert len(logs) == 4
        # the same command again: every finished job is reused (no stage runs), same runs
        out = sweep(tmp_path, MIXED)
        assert (out.stdout + out.stderr).count("finished before: reusing its outputs") == 4
        assert {p: p.stat().st_size for p in logs} == logs
        again = check_tree(tmp_path, MIXED)
        assert again["parent"] == first["parent"] and again["jobs"] == first["jobs"]
        assert again["comparison"] != first["comparison"]  # replaced, the old one deleted
        state = json.loads((tmp_path / "sw" / SWEEP_FILE).read_text())
        assert state["parent_run_id"] == first["parent"]


class TestJoblibLauncher:
    def test_joblib_launcher_sweep_nests_runs(self, tmp_path: Path) -> None:
        """Two simulated judges x 2 seeds, two jobs at a time."""
        sweep(tmp_path, SIMULATED, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
        check_tree(tmp_path, SIMULATED)


def test_faces_n_sweep_datasets_are_nested(tmp_path: Path) -> None:
    """Sweeping faces.n uses paper_nested: N = 1's face is N = 2's first face, same pixels."""
    from stylisticbias.config import compose
    from stylisticbias.sweep.spec import job_params, plan_sweep

    sampler = plan_sweep(["faces.n=1,2"]).sampler
    builds = []
    for n in (1, 2):
        params = job_params(
            compose([f"faces.n={n}", "variations.scope=evaluated"], "sweep"), sampler
        )
        builds.append(
            ensure_dataset(
                params,
                tmp_path,
                lambda pf, key: run_stages(dataset_stages(), pf, tmp_path / "log", label=key),
            )
        )
    small, large = (pd.read_parquet(b / "faces" / "faces.parquet") for b in builds)
    assert len(small) == 1 and len(large) == 2
    # same id, demographics, prompt, render seed, file and pixel hash
    pd.testing.assert_frame_equal(small, large.iloc[:1])
    a = (builds[0] / "faces" / small["path"].iloc[0]).read_bytes()
    b = (builds[1] / "faces" / large["path"].iloc[0]).read_bytes()
    assert a == b


def test_failed_job_is_reported_and_the_sweep_exits_1(tmp_path: Path) -> None:
    """A judge whose weights cannot be loaded (offline): one error line, job.json and its MLflow
    run marked failed, the comparison counts it, exit status 1."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "stylisticbias.sweep",
            "-m",
            "model=qwen3-vl-8b",
            *SMALL,
            f"tracking.tracking_uri=sqlite:///{tmp_path}/mlflow.db",
            f"hydra.sweep.dir={tmp_path}/sw",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert out.returncode == 1, out.stderr[-2000:]
    text = out.stdout + out.stderr
    assert "stage judge qwen3-vl-8b failed" in text
    record = json.loads((tmp_path / "sw" / "0" / "job.json").read_text())
    assert record["status"] == "failed" and "judge qwen3-vl-8b" in record["error"]
    runs = live_runs(tmp_path / "mlflow.db")
    job = next(r for r in runs.values() if r["kind"] == "sweep-job")
    assert job["status"] == "FAILED"
    comparison = next(i for i, r in runs.items() if r["kind"] == "sweep-comparison")
    assert metrics_of(tmp_path / "mlflow.db", comparison)["n_failed"] == 1


@pytest.mark.parametrize("experiment", ["reflect-demo", "vignette-demo"])
def test_task_protocol_demo_sweeps_log_intervals_per_job(tmp_path: Path, experiment: str) -> None:
    """A task protocol's demo sweeps like the default: one job per judge, each job's run holds
    the task tables' intervals (point, ci_low, ci_high) from its metrics.json and, nested under
    it, its stages' runs (the judge run, the model's run and the comparison run)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("STYLISTICBIAS_PARENT_RUN_ID", None)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "stylisticbias.sweep",
            "-m",
            f"experiment={experiment}",
            "model=simulated-strong,simulated-weak",
            "faces.n=16",
            "tracking=mlflow",
            f"tracking.tracking_uri=sqlite:///{tmp_path}/mlflow.db",
            f"hydra.sweep.dir={tmp_path}/sw",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    db = tmp_path / "mlflow.db"
    runs = live_runs(db)
    parent = next(i for i, r in runs.items() if not r["parent"])
    jobs_ = {r["name"]: i for i, r in runs.items() if r["parent"] == parent}
    assert {"model=simulated-strong", "model=simulated-weak"} <= set(jobs_)
    table = "reflect_win_rates." if experiment == "reflect-demo" else "task_position_bias."
    for name in ("model=simulated-strong", "model=simulated-weak"):
        model = name.split("=")[1]
        below = {r["name"] for r in runs.values() if r["parent"] == jobs_[name]}
        assert {f"judge/{model}", model, "comparison"} <= below, below  # judge + track stages
        m = metrics_of(db, jobs_[name])
        points = [k for k in m if k.startswith(table) and k + ".ci_low" in m]
        assert points, sorted(m)[:20]
        for k in points:
            assert m[f"{k}.ci_low"] <= m[k] <= m[f"{k}.ci_high"]
    figures = sorted(p.name for p in (tmp_path / "sw").glob("*/reports/figures/*.png"))
    assert figures, "the report stage drew no figure"
