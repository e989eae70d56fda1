"""The report of a paired-variation protocol: headline, figures, paper comparison."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from paired_scores import simulated_scores

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import ROOT, compose
from stylisticbias.families.paired_variation.analysis.run import analyze_paired, write_paired
from stylisticbias.families.paired_variation.report.report import (
    build_paired_report,
    compare_categories,
)
from stylisticbias.spec.parse import config_from_params


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The paired analysis and report of two simulated models, once per module (the tests
    only read it)."""
    tmp_path = tmp_path_factory.mktemp("paired-report")
    params = compose(["experiment=beauty-demo"])
    params["paths"]["reports"] = "reports"
    bench = benchmark_from_params(params)
    shutil.copytree(ROOT / "conf" / "reference", tmp_path / "conf" / "reference")
    scores = {
        "simulated-halo-strong": simulated_scores(bench, "simulated-halo-strong", 0.25, 0),
        "simulated-halo-weak": simulated_scores(bench, "simulated-halo-weak", 0.1, 1),
    }
    tables = analyze_paired(scores, bench, AnalysisSettings(n_resamples=100))
    write_paired(tables, tmp_path / "reports")
    cal = {"halo": {"coverage": 0.95, "n_cells": 66}, "simulated": True}
    (tmp_path / "reports" / "calibration.json").write_text(json.dumps(cal))
    build_paired_report(config_from_params(params), bench, tmp_path)
    return tmp_path, params


def test_report_has_its_headline_figures_and_comparison(report) -> None:
    root, _ = report
    md = (root / "reports" / "README.md").read_text(encoding="utf-8")
    assert md.startswith("# beauty-and-the-bias: original vs beautified images — SIMULATED")
    assert "**Halo effect** over the 33 `halo` scenarios" in md
    assert "| simulated-halo-strong | 33 |" in md
    assert "**Share of scenarios with a significant bias**" in md
    assert "## Comparison with the paper" in md and "| Average |" in md
    assert "83.8" in md  # the paper's table-backed total of Table 2 (Average)
    assert "halo shift: CI coverage 0.95 over 66 cells" in md
    for png in ("paired_h_by_scenario.png", "paired_means.png"):
        assert (root / "reports" / "figures" / png).stat().st_size > 10_000
        assert f"figures/{png}" in md
    plot = pd.read_csv(root / "reports" / "plots" / "paired_h_by_scenario.csv")
    assert len(plot) == 2 * 91


def test_a_paper_model_is_compared_with_its_own_row(report) -> None:
    root, _ = report
    rates = pd.read_csv(root / "reports" / "tables" / "paired_category_rates.csv")
    ref = pd.read_csv(ROOT / "conf/reference/beauty-and-the-bias/category_rates.csv")
    out = compare_categories(rates, ref, {"simulated-halo-strong": "Gemma"})
    gemma = out[(out["model"] == "simulated-halo-strong") & (out["bias"] == "attractiveness")]
    assert gemma["paper row"].iloc[0] == "Gemma"
    assert gemma["Total"].iloc[0].endswith(" / 89.0")  # Table 2: Gemma 89.0%
    weak = out[out["model"] == "simulated-halo-weak"]
    assert set(weak["paper row"]) == {"Average"}


def test_every_output_the_dvc_stages_declare_is_written(report) -> None:
    """analyze and report of the paired suite write each of their dvc.yaml outputs (DVC refuses
    a stage whose declared output is missing: beauty-demo's analyze once lacked metrics_all.json
    and its report the leaderboard folder)."""
    root, _ = report
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    prefix = "reports/${key}/"  # the protocol's paths.reports: here root/reports
    checked = []
    for name in ("analyze", "report"):  # one stage per protocol (foreach ... do)
        for out in stages[name]["do"]["outs"]:
            path = next(iter(out)) if isinstance(out, dict) else out
            if path.startswith(prefix):
                assert (root / "reports" / path.removeprefix(prefix)).exists(), (name, path)
                checked.append(path.removeprefix(prefix))
    assert {"tables", "metrics.json", "README.md", "figures"} <= set(checked), checked
    metrics = root / "reports" / "metrics.json"
    assert (root / "reports" / "metrics_all.json").read_bytes() == metrics.read_bytes()
