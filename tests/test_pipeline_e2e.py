"""End to end through DVC on a copy of the project: `dvc repro` (smoke and demo experiments)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from stylisticbias.config import ROOT, load_group_option
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


@pytest.mark.slow  # a whole dvc repro with the tiny hf model: ~1.5 min idle (make test-all)
def test_smoke_experiment_runs_hf_engine_end_to_end(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "proj")
    cfg = load_group_option("model", "tiny-llava-next")  # the judge never builds checkpoints
    tiny.ensure_built(cfg["local_build"], project / cfg["hub_id"])
    _repro(project, "experiment=smoke")
    j = pd.read_parquet(project / "data/judgments/tiny-llava-next/judgments.parquet")
    assert set(j["engine"]) == {"hf"} and set(j["decoding"]) == {"exact"}
    assert not j["simulated"].any()
    assert j.groupby("image_id").size().eq(4 * 4).all()  # 4 scenarios x 4 orderings
    s = read_model_scores(project / "data/scores", "tiny-llava-next")
    assert s["phi"].notna().all() and len(s) == j["image_id"].nunique() * 4
    report = (project / "reports/README.md").read_text()
    assert "tiny-llava-next" in report and "SIMULATED" not in report.splitlines()[0]
    assert _repro_again(project) == ["check"]


@pytest.mark.slow
def test_demo_pipeline_end_to_end(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "proj")
    _repro(project)
    report = (project / "reports/README.md").read_text()
    assert report.splitlines()[0].endswith("SIMULATED data")
    assert (project / "reports/calibration.json").exists()
    assert _repro_again(project) == ["check"]


@pytest.mark.slow  # two whole dvc repro runs of the task protocols' offline demos (minutes)
@pytest.mark.parametrize(
    ("experiment", "tables"),
    [
        ("reflect-demo", {"reflect_win_rates", "reflect_mcq_distribution", "reflect_salary_gaps"}),
        ("vignette-demo", {"vignette_selection", "vignette_log_odds", "vignette_text_vs_image"}),
    ],
)
def test_task_protocol_demo_end_to_end(tmp_path: Path, experiment: str, tables: set[str]) -> None:
    """`configure compose experiment=<demo> && dvc repro` runs every stage of the DAG offline
    and writes the task records, the task tables and the report; a second repro does nothing."""
    project = _copy_project(tmp_path / "proj")
    _repro(project, f"experiment={experiment}")
    import yaml

    listed = subprocess.run(["dvc", "stage", "list", "--name-only"], cwd=project, env=_env(),
                            check=True, capture_output=True, text=True).stdout.split()  # fmt: skip
    locked = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    models = ["simulated-strong", "simulated-weak"]
    assert {f"judge@{m}" for m in models} <= set(listed)
    assert set(listed) <= set(locked), set(listed) - set(locked)  # every stage ran (no lock before)
    for m in models:
        rec = pd.read_parquet(project / f"data/judgments/{m}/task_records.parquet")
        assert {"reason", "undecided"} <= set(rec.columns) and len(rec) > 0
    written = {p.stem for p in (project / "reports/tables").glob("*.csv")}
    assert tables <= written, tables - written
    assert (project / "reports/tables/task_report.md").is_file()
    assert (project / "reports/README.md").is_file()
    assert _repro_again(project) == ["check"]
