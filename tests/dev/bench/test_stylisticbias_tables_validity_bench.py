"""The StylisticBias tables' validity benchmark: its ``--tables`` re-measurement path."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
import pytest

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import load_benchmark
from stylisticbias_dev.bench import stylisticbias_tables_validity as tv


def test_released_tables_are_the_analysis_tables() -> None:
    """The fast path computes the released code's tables exactly as the whole analysis does."""
    bm = load_benchmark("stylisticbias")
    s = AnalysisSettings(n_resamples=5, n_permutations=19)
    scores = tv.planted_scores(bm, tv.Plant(16, 0.0), 1)
    fast = tv.released_tables(scores, bm, s)
    full = tv.analyze(scores, bm, s)
    assert set(fast) == tv.RELEASED_TABLES
    for k, t in fast.items():
        pd.testing.assert_frame_equal(t.reset_index(drop=True), full[k].reset_index(drop=True))


def test_tables_filter_merges_only_its_entries(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    rate = {"rate": 0.05, "ci95": [0.04, 0.06]}
    entry = {f"alpha_{a}": {"null_false_positive": rate, "power": rate} for a in tv.ALPHAS}
    cover = {"truth": 0.0, "null_truth": {"rate": 0.95}}
    stored = {
        "other": {"kept": True},
        "protocols": {
            "stylisticbias": {
                "valid_inference": {
                    "tables": {
                        "tests": {"vs_by_model": entry},
                        "coverage": {"vs_by_model.debiased": cover},
                    }
                }
            }
        },
    }
    out.write_text(json.dumps(stored), "utf-8")
    argv = ["--replicates", "2", "--effect-replicates", "1", "--faces", "16"]
    argv += ["--bootstrap", "5", "--permutations", "19", "--tables", "scenario_agreement"]
    quiet = logging.getLogger("stylisticbias")
    level = quiet.level
    try:  # main() quiets the library's logger for its run: not for the tests after this one
        with pytest.MonkeyPatch.context() as m:
            m.setattr(logging, "basicConfig", lambda **kw: None)
            assert tv.main([*argv, "--out", str(out)]) == 0
    finally:
        quiet.setLevel(level)
    data = json.loads(out.read_text("utf-8"))
    t = data["protocols"]["stylisticbias"]["valid_inference"]["tables"]
    assert data["other"] == {"kept": True}
    assert t["tests"]["vs_by_model"] == entry
    assert t["coverage"]["vs_by_model.debiased"] == cover
    assert t["within_targets"]["test:vs_by_model"] is False  # 0.05 at 0.01 is off target
    assert "scenario_agreement.kendall_w" in t["tests"]
    assert "mixed_model" not in t["tests"]
    assert "scenario_agreement.icc_2_1" in t["coverage"]
    assert t["runs"][-1]["tables"] == ["scenario_agreement"]
