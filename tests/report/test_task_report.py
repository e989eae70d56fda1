"""A task protocol's report: headline, figures and README from the task tables; the
per-model metrics (every interval and test) that the analyze stage writes to metrics.json and
the track stage logs to MLflow (a real SQLite store)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from stylisticbias.analysis.task_demo import reflect_demo, vignette_demo, write
from stylisticbias.analysis.task_metrics import task_metrics
from stylisticbias.analysis.task_records import task_markdown
from stylisticbias.benchmark import load_benchmark
from stylisticbias.report.task_report import build_task_report
from stylisticbias.report.task_track import log_task_report, read_task_tables, task_headline
from stylisticbias.tracking import tracking_spec

MODELS = ("simulated-strong", "simulated-weak")


def _reports(tmp: Path, protocol: str) -> Path:
    reports = tmp / "reports"
    demo = reflect_demo if protocol == "reflect" else vignette_demo
    tables: dict[str, list[pd.DataFrame]] = {}
    for seed, m in enumerate(MODELS, start=1):
        for name, df in demo(m, seed=seed, n_boot=50).items():
            tables.setdefault(name, []).append(df)
    stacked = {n: pd.concat(d, ignore_index=True) for n, d in tables.items()}
    write(stacked, reports / "tables")
    md = task_markdown(stacked, load_benchmark(protocol))
    (reports / "tables" / "task_report.md").write_text(md, encoding="utf-8")
    (reports / "calibration.json").write_text(json.dumps({"models": {}}), encoding="utf-8")
    return reports


@pytest.fixture(scope="module")
def reflect_reports(tmp_path_factory) -> Path:
    return _reports(tmp_path_factory.mktemp("reflect"), "reflect")


def test_task_metrics_carry_every_interval(reflect_reports: Path) -> None:
    tables = read_task_tables(reflect_reports / "tables")
    m = task_metrics(tables, "simulated-strong")
    wr = tables["reflect_win_rates"]
    wr = wr[wr["model"] == "simulated-strong"]
    points = [k for k in m if k.startswith("reflect_win_rates.") and k.count(".") == 2]
    assert len(points) == len(wr)
    for g in wr["group"]:
        k = f"reflect_win_rates.1.{g}"
        assert m[f"{k}.ci_low"] <= m[k] <= m[f"{k}.ci_high"]
    assert "reflect_salary_tests.21.group.pval" in m and "position_bias.1.pval" in m
    assert task_metrics(tables, "nobody") == {}


def test_reflect_report_has_headline_and_figures(reflect_reports: Path) -> None:
    readme = build_task_report(load_benchmark("reflect"), reflect_reports)
    text = readme.read_text(encoding="utf-8")
    assert "## Headline" in text and "simulated-weak: highest 2AFC win rate" in text
    assert "largest MCQ relative mean gap" in text and "largest salary Gap%" in text
    figs = sorted(p.name for p in (reflect_reports / "figures").glob("*.png"))
    assert figs == ["reflect_mcq_distributions.png", "reflect_win_matrix.png"]
    for f in figs:
        assert f"(figures/{f})" in text


def test_vignette_report_has_the_forest_plot(tmp_path: Path) -> None:
    reports = _reports(tmp_path, "vignette")
    text = build_task_report(load_benchmark("vignette"), reports).read_text(encoding="utf-8")
    assert "(figures/vignette_log_odds_forest.png)" in text
    assert "strongest log-odds" in text and "selection frequency of doctor" in text
    tables = read_task_tables(reports / "tables")
    lines = task_headline(tables, "simulated-strong")
    assert any("position bias" in line for line in lines)


def test_track_logs_one_run_per_model_with_intervals(reflect_reports: Path, tmp_path) -> None:
    db = tmp_path / "mlflow.db"
    params = {"protocol": "reflect", "tracking": {"enabled": True,
              "tracking_uri": f"sqlite:///{db}", "experiment_name": "task-test"}}  # fmt: skip
    ids = log_task_report(tracking_spec(params), "reflect", reflect_reports, "digest")
    assert set(ids) == set(MODELS)
    want = task_metrics(read_task_tables(reflect_reports / "tables"), "simulated-weak")
    with sqlite3.connect(db) as con:
        got = dict(con.execute("SELECT key, value FROM latest_metrics WHERE run_uuid = ?",
                               (ids["simulated-weak"],)).fetchall())  # fmt: skip
    assert got == pytest.approx(want)
    assert any(k.endswith(".ci_low") for k in got)


def test_report_without_calibration_says_so(tmp_path: Path) -> None:
    """A sweep job runs no calibrate stage: the report is written and says it is uncalibrated."""
    reports = _reports(tmp_path, "reflect")
    (reports / "calibration.json").unlink()
    text = build_task_report(load_benchmark("reflect"), reports).read_text(encoding="utf-8")
    assert "Not calibrated" in text and "## Headline" in text
