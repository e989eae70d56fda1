"""A paired-variation protocol on the bias card (the family's ``audit`` hook): each model's
halo rate with its interval, read from the tables the analyze stage wrote, is its headline."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from paired_scores import simulated_scores

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import compose
from stylisticbias.families.paired_variation.analysis.run import analyze_paired, write_paired
from stylisticbias.family import FAMILIES
from stylisticbias.spec.parse import config_from_params

MODELS = {"simulated-halo-strong": 0.25, "simulated-halo-weak": 0.0}


def test_the_halo_rate_is_each_models_headline(tmp_path: Path) -> None:
    params = compose(["experiment=beauty-demo"])
    params["paths"]["reports"] = "reports"
    bench = benchmark_from_params(params)
    scores = {
        m: simulated_scores(bench, m, halo, i, faces=24)
        for i, (m, halo) in enumerate(MODELS.items())
    }
    write_paired(
        analyze_paired(scores, bench, AnalysisSettings(n_resamples=50)), tmp_path / "reports"
    )
    config = config_from_params(params)
    hook = FAMILIES.lookup("paired_variation", "test").hook("audit")
    found = hook(config, tmp_path)
    halo = pd.read_csv(tmp_path / "reports/tables/paired_halo.csv").set_index("model")
    for m in MODELS:
        head = [f for f in found if f.model == m and f.headline]
        assert [f.key for f in head] == ["halo_rate"]
        (f,) = head
        row = halo.loc[m]
        assert (f.value, f.ci_low, f.ci_high) == (
            row["halo_rate"],
            row["halo_rate_low"],
            row["halo_rate_high"],
        )
        assert f.unit == "percent" and f"{100 * f.value:.1f}%" in f.text
        assert {g.key for g in found if g.model == m} == {"halo_rate", "shift.max_abs"}
