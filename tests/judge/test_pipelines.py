"""The thin judge/scores stage scripts: one error line for bad input; end-to-end with MLflow."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from judge_tables import make_tables

from stylisticbias.config import dump_params
from stylisticbias.judge.run import run_judge
from stylisticbias.judge.summary import run_log_path
from stylisticbias.score_store import read_model_scores, scores_file
from stylisticbias.scores import write_scores
from stylisticbias.spec.parse import config_from_params

ROOT = Path(__file__).resolve().parents[2]


def test_unknown_model_is_one_line_exit_2() -> None:
    proc = subprocess.run(
        [sys.executable, "pipelines/judge.py", "no-such-model"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "'no-such-model' is not judged" in lines[0] and "simulated-strong" in lines[0]


def test_judge_then_scores_with_mlflow(tmp_path: Path) -> None:
    import mlflow

    params = make_tables(tmp_path, 2)
    params["tracking"] = {
        **params["tracking"],
        "enabled": True,
        "tracking_uri": f"sqlite:///{tmp_path / 'm.db'}",
        "experiment_name": "judge-test",
    }
    out = run_judge("simulated-weak", config_from_params(params), progress=False)
    run = json.loads(run_log_path(out).read_text())
    written = write_scores("simulated-weak", config_from_params(params))
    assert written == scores_file(params["paths"]["scores"], "simulated-weak")  # model=<name>/
    scores = read_model_scores(params["paths"]["scores"], "simulated-weak")
    n_img = pd.read_parquet(out / "judgments.parquet")["image_id"].nunique()
    assert len(scores) == n_img * 25 and scores["simulated"].all()
    assert scores.loc[~scores["is_base"], "delta"].notna().any()
    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    runs = mlflow.search_runs(experiment_names=["judge-test"])
    assert len(runs) == 1 and runs.iloc[0]["run_id"] == run["mlflow_run_id"]
    r = runs.iloc[0]
    assert r["params.model"] == "simulated-weak" and r["params.effect_scale"] == "0.4"
    assert r["metrics.invalid_rate"] == 0.05 and r["metrics.images_per_s"] > 0
    assert r["tags.simulated"] == "true"


def test_two_runs_write_byte_identical_judgment_directories(tmp_path: Path) -> None:
    """Timings and run ids live in the run log beside the DVC output, so its hash is stable."""
    params = make_tables(tmp_path, 2)
    params["tracking"] = {
        **params["tracking"],
        "enabled": True,
        "tracking_uri": f"sqlite:///{tmp_path / 'm.db'}",
        "experiment_name": "judge-test",
    }
    a = run_judge(
        "simulated-weak", config_from_params(params), progress=False, out_dir=tmp_path / "a" / "m"
    )
    (tmp_path / "b" / "m").mkdir(parents=True)
    (tmp_path / "b" / "m" / "run.json").write_text("{}")  # an earlier version's run log
    b = run_judge(
        "simulated-weak", config_from_params(params), progress=False, out_dir=tmp_path / "b" / "m"
    )

    def files(d: Path) -> dict[str, bytes]:
        return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}

    assert files(a) == files(b) and "judgments.parquet" in files(a)
    logs = [json.loads(run_log_path(d).read_text()) for d in (a, b)]
    assert logs[0]["mlflow_run_id"] != logs[1]["mlflow_run_id"]
    assert all(lg["seconds"] is not None for lg in logs)


BLOCK_HEAVY = (  # the judge stage with torch, lightning and the judge run module unimportable
    "import runpy, sys\n"
    "for m in ('torch', 'lightning', 'stylisticbias.judge.run'):\n"
    "    sys.modules[m] = None\n"
    "sys.argv = ['pipelines/judge.py', 'simulated-weak']\n"
    "runpy.run_path('pipelines/judge.py', run_name='__main__')\n"
)


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("orderings", [5], "judge.orderings: unknown id(s) [5]; valid: all or [1, 2, 3, 4]"),
        ("orderings", [1, 9], "judge.orderings: unknown id(s) [9]"),
        ("scenarios", [99], "judge.scenarios:"),
    ],
)
def test_bad_judge_settings_are_refused_before_any_table_or_heavy_import(
    tmp_path: Path, key: str, value: list[int], needle: str, default_params: dict
) -> None:
    """``judge.orderings=[5]`` was reported only after the judging libraries and the tables
    were loaded (~30 s); now it is one line before either: the stage runs with torch,
    lightning and the module that loads the tables made unimportable."""
    params = copy.deepcopy(default_params)  # the whole configuration: the stage composes nothing
    params["judge"][key] = value
    bad = tmp_path / "params.yaml"
    bad.write_text(yaml.safe_dump(params, sort_keys=False))
    proc = subprocess.run(
        [sys.executable, "-c", BLOCK_HEAVY],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "STYLISTICBIAS_PARAMS": str(bad)},
    )
    # before the heavy imports: with them made unimportable, the refusal is still our one line
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert needle in lines[0], lines[0]


def test_judge_stage_with_nothing_to_judge_imports_no_judging_library(tmp_path: Path) -> None:
    """Lightning and torch load only to judge: the stage on a finished model (nothing left to
    judge) checks and consolidates with both made unimportable, the judgments unchanged."""
    project = tmp_path / "project"
    project.mkdir()
    os.symlink(ROOT / "conf", project / "conf")
    params = make_tables(project / "data", 1)
    (project / "params.yaml").write_text(dump_params(params), encoding="utf-8")
    out = run_judge("simulated-weak", config_from_params(params), progress=False)
    before = (out / "judgments.parquet").read_bytes()
    script = BLOCK_HEAVY.replace("'stylisticbias.judge.run'", "'stylisticbias.judge.writer'")
    script = script.replace("'pipelines/judge.py'", repr(str(ROOT / "pipelines" / "judge.py")))
    src = f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": src},
    )
    assert proc.returncode == 0, proc.stderr
    assert "nothing to judge or consolidate" in proc.stderr, proc.stderr  # records unread
    assert (out / "judgments.parquet").read_bytes() == before
