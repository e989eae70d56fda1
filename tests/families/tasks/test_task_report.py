"""A task protocol's report: headline, figures and README from the task tables; the
per-model metrics (every interval and test) that the analyze stage writes to metrics.json and
the track stage's MLflow runs (a real SQLite store)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from mlflow_store import run_artifacts, run_metrics, run_tags

from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import compose
from stylisticbias.families.tasks.analysis.demo import reflect_demo, vignette_demo, write
from stylisticbias.families.tasks.analysis.metrics import task_metrics
from stylisticbias.families.tasks.analysis.records import task_markdown
from stylisticbias.families.tasks.report.mlflow_runs import (
    HEADLINE,
    log_task_report,
    task_headline_metrics,
)
from stylisticbias.families.tasks.report.report import build_task_report
from stylisticbias.families.tasks.report.track import read_task_tables, task_headline
from stylisticbias.report.mlflow_log import MAX_RUN_METRICS
from stylisticbias.spec import Config
from stylisticbias.spec.parse import config_from_params

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


@pytest.fixture(scope="module")
def reflect_readme(reflect_reports: Path) -> Path:
    """The reflect report built once, in place: README and figures beside the tables (what
    the tracking test logs)."""
    return build_task_report(load_benchmark("reflect"), reflect_reports)


@pytest.fixture(scope="module")
def vignette_reports(tmp_path_factory) -> Path:
    """The vignette demo's tables (built once; the tests that build a report copy them)."""
    return _reports(tmp_path_factory.mktemp("vignette"), "vignette")


def _copy_tables(reports: Path, tmp: Path) -> Path:
    """A fresh ``reports/`` holding ``reports``' tables and calibration (no README, figures)."""
    out = tmp / "reports"
    shutil.copytree(reports / "tables", out / "tables")
    shutil.copy2(reports / "calibration.json", out / "calibration.json")
    return out


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
    assert "reflect_salary_tests.21.group.pval" in m and "task_position_bias.1.pval" in m
    assert task_metrics(tables, "nobody") == {}


def test_reflect_report_has_headline_and_figures(
    reflect_reports: Path, reflect_readme: Path
) -> None:
    text = reflect_readme.read_text(encoding="utf-8")
    assert "## Headline" in text and "simulated-weak: highest 2AFC win rate" in text
    assert "largest MCQ relative mean gap" in text and "largest salary Gap%" in text
    figs = sorted(p.name for p in (reflect_reports / "figures").glob("*.png"))
    assert figs == ["reflect_mcq_distributions.png", "reflect_win_matrix.png"]
    for f in figs:
        assert f"(figures/{f})" in text


def test_vignette_report_has_the_heat_map(vignette_reports: Path, tmp_path: Path) -> None:
    reports = _copy_tables(vignette_reports, tmp_path)
    text = build_task_report(load_benchmark("vignette"), reports).read_text(encoding="utf-8")
    assert "(figures/vignette_log_odds_heatmap.png)" in text
    assert "strongest log-odds" in text
    tables = read_task_tables(reports / "tables")
    lines = task_headline(tables, "simulated-strong")
    assert any("position bias" in line for line in lines)
    # the selection frequency: its unit, which end it is, and what it is compared with
    sel = tables["vignette_selection"]
    sel = sel[sel["model"] == "simulated-strong"]
    n = sel["identity"].nunique()
    for rank, r in (
        ("highest", sel.loc[sel["selection_frequency"].idxmax()]),
        ("lowest", sel.loc[sel["selection_frequency"].idxmin()]),
    ):
        (got,) = [x for x in lines if f"{rank} selection frequency of {n} identities" in x]
        assert f", {r['identity']}: {r['selection_frequency']:.3g}% [" in got, got
        assert got.endswith("] of the pairs it was shown in (50% = no preference)"), got
        assert len(got.split()) <= 30
        assert got in text


def _config(db: Path, experiment: str = "reflect-demo") -> Config:
    uri = f"tracking.tracking_uri=sqlite:///{db}"
    return config_from_params(
        compose(
            [
                f"experiment={experiment}",
                "tracking=mlflow",
                uri,
                "tracking.experiment_name=task-test",
            ]
        )
    )


def test_track_logs_one_run_per_model_and_a_comparison(
    reflect_reports: Path, reflect_readme: Path, tmp_path: Path
) -> None:
    """Per-model runs: the headline with intervals (<= 30 metrics, the same keys in every run),
    every interval and test in tables/metrics_all.json, the same table and figure artifacts in
    every model run; a comparison run with the README and the report's figures."""
    db = tmp_path / "mlflow.db"
    config = _config(db)
    ids = log_task_report(config, reflect_reports, "digest")
    assert set(ids) == {*MODELS, "comparison"}
    tables = read_task_tables(reflect_reports / "tables")
    tags = run_tags(db)
    assert len(tags) == 3
    keys, arts = set(), []
    for m in MODELS:
        assert tags[ids[m]]["stylisticbias.run_kind"] == "model"
        assert tags[ids[m]]["model"] == m and tags[ids[m]]["simulated"] == "true"
        got = run_metrics(db, ids[m])
        assert got == pytest.approx(task_headline_metrics(tables, m))
        assert 0 < len(got) <= MAX_RUN_METRICS
        keys.add(frozenset(got))
        wr = tables["reflect_win_rates"]
        top = wr.loc[wr.loc[wr["model"] == m, "win_rate"].idxmax()]
        assert got["win_rate.max"] == pytest.approx(top["win_rate"])
        assert got["win_rate.max.ci_low"] == pytest.approx(top["ci_low"])
        assert got["win_rate.max.ci_low"] <= got["win_rate.max"] <= got["win_rate.max.ci_high"]
        art = run_artifacts(db, ids[m])
        arts.append(art)
        every = json.loads(
            (
                db.parent
                / next(db.parent.glob(f"mlruns/*/{ids[m]}/artifacts/tables/metrics_all.json"))
            ).read_text()
        )
        logged = dict(zip(*zip(*every["data"])))
        # the JSON table keeps 10 decimals: p-values of 1e-6 differ in their 6th digit
        assert logged == pytest.approx(task_metrics(tables, m), rel=1e-6, abs=1e-10)
    assert len(keys) == 1 and arts[0] == arts[1]  # the compare view lines the runs up
    assert {f"tables/{n}.json" for n in tables} | {"tables/metrics_all.json"} <= arts[0]
    assert {"figures/reflect_win_matrix.png", "figures/reflect_mcq_distributions.png"} <= arts[0]
    comparison = run_artifacts(db, ids["comparison"])
    assert {"README.md", "figures/reflect_win_matrix.png", "calibration.json"} <= comparison
    assert tags[ids["comparison"]]["stylisticbias.run_kind"] == "comparison"
    # a rerun of the same report replaces its runs instead of adding to them
    again = log_task_report(config, reflect_reports, "digest")
    assert set(run_tags(db)) == set(again.values()) and len(again) == 3


def test_headline_keys_fit_a_run_page(vignette_reports: Path) -> None:
    """Every headline entry at once stays within the budget; vignette's runs share its keys."""
    assert sum(3 if ci else 1 for *_, ci in HEADLINE) <= MAX_RUN_METRICS
    tables = read_task_tables(vignette_reports / "tables")
    a, b = (task_headline_metrics(tables, m) for m in MODELS)
    assert set(a) == set(b) and "log_odds.max_abs.ci_high" in a and "win_rate.max" not in a
    lo = tables["vignette_log_odds"]
    mine = lo[lo["model"] == MODELS[0]]
    assert abs(a["log_odds.max_abs"]) == pytest.approx(mine["log_odds"].abs().max())
    assert task_headline_metrics(tables, "nobody") == {}


def test_report_without_calibration_says_so(reflect_reports: Path, tmp_path: Path) -> None:
    """A sweep job runs no calibrate stage: the report is written and says it is uncalibrated."""
    reports = _copy_tables(reflect_reports, tmp_path)
    (reports / "calibration.json").unlink()
    text = build_task_report(load_benchmark("reflect"), reports).read_text(encoding="utf-8")
    assert "Not calibrated" in text and "## Headline" in text
