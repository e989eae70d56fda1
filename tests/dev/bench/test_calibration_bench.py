"""The calibration benchmark at toy scale: three plants, every table summarised, JSON complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stylisticbias_dev.bench import calibration


def test_plants_are_what_their_names_say() -> None:
    p = calibration.plants()
    assert set(p) == {"default", "mixed", "null"}
    assert all(v == {"default": 0.0} for a in p["null"]["variations"].values() for v in a.values())
    assert not p["null"]["interactions"]
    fashion = p["mixed"]["variations"]["Fashion style"]
    assert fashion["Worn / Distressed clothing"]["default"] > 0  # sign-flipped
    assert all(v == {"default": 0.0} for v in p["mixed"]["variations"]["Hair color"].values())
    assert len(p["mixed"]["interactions"]) > len(p["default"]["interactions"])


@pytest.mark.slow  # benchmark-like: replicates of three plants (make test-all)
def test_calibration_bench_writes_every_table(tmp_path: Path) -> None:
    import logging

    out = tmp_path / "calibration.json"
    before = logging.getLogger("stylisticbias").level
    rc = calibration.main(
        [
            "--replicates",
            "2",
            "--faces",
            "24",
            "--population",
            "60",
            "--fdr-replicates",
            "3",
            "--models",
            "simulated-weak",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    # the study quiets per-replicate warnings only while it runs (later tests read warnings)
    assert logging.getLogger("stylisticbias").level == before
    doc = json.loads(out.read_text())
    assert doc["command"].startswith("python -m stylisticbias_dev.bench.calibration")
    assert "machine" in doc and doc["settings"]["replicates"] == 2
    for plant in ("default", "mixed", "null"):
        t = doc["plants"][plant]
        assert set(t) == set(calibration.TABLES)
        for name, summary in t.items():
            assert 0.0 <= summary["coverage"] <= 1.0
            lo, hi = summary["coverage_ci95"]
            assert lo <= summary["coverage"] <= hi
            assert summary["n_replicates"] == 2 and len(summary["coverage_ci95_by_replicate"]) == 2
            if name != "vs_debiased":
                assert 0.0 <= summary["fdr"] <= 1.0
        assert t["vs_debiased"]["paper_vs_ci_contains_estimate"] == 1.0
        assert t["vs_debiased"]["ci_contains_estimate"] == 1.0
        assert set(t["vs_debiased"]["by_dimension"]) == {"age", "body", "ethnicity", "gender"}
    # the all-null plant has only null cells, and its de-biased VS truth is 0
    assert (
        doc["plants"]["null"]["table12"]["n_null_cells"]
        == doc["plants"]["null"]["table12"]["n_cells"]
    )
    assert doc["plants"]["null"]["vs_debiased"]["n_null_cells"] == 8
    # the null plant's tested tables carry the many-replicate FDR study
    for name in calibration.TESTED:
        study = doc["plants"]["null"][name]["fdr_study"]
        assert study["replicates"] == 3 and study["fdr_nominal"] == 0.05
        assert study["fdr_ci95"][0] <= study["fdr"] <= study["fdr_ci95"][1]
        assert 0.0 <= study["raw_test_size"] <= 1.0 and study["tests_per_replicate"] > 0
        assert "fdr_study" not in doc["plants"]["default"][name]
        null = doc["plants"]["null"][name]  # the study gives the null plant's headline FDR
        assert null["fdr"] == study["fdr"] and null["fdr_replicates"] == 3
        assert null["fdr_ci95"] == study["fdr_ci95"] and 0.0 <= null["fdr_main_replicates"] <= 1
        assert doc["plants"]["default"][name]["fdr_replicates"] == 2


def test_null_fdr_study_counts_replicates_with_any_discovery(monkeypatch) -> None:
    """Under the all-null plant the FDR is the share of replicates with any BH discovery: two of
    five replicates with discoveries (3 and 1) -> 0.4, whatever their number; the one-sided
    binomial p-value is SciPy's."""
    from scipy import stats

    def chunk(args):
        rs, _, _ = args
        disc = {1: 3, 4: 1}
        return [
            {
                "replicate": r,
                "table": t,
                "tests": 80,
                "discoveries": disc.get(r, 0),
                "raw_below_alpha": 4,
            }
            for r in rs
            for t in calibration.TESTED
        ]

    monkeypatch.setattr(calibration, "_null_chunk", chunk)
    out = calibration.null_fdr_study(5, 24, ["simulated-weak"], 0.05)
    for name in calibration.TESTED:
        assert out[name]["fdr"] == 0.4 and out[name]["replicates"] == 5
        p = stats.binomtest(2, 5, 0.05, alternative="greater").pvalue
        assert out[name]["p_fdr_above_nominal"] == round(p, 4)
        assert out[name]["raw_test_size"] == 0.05


def test_coverage_interval_by_replicate_is_the_t_interval_of_replicate_coverages() -> None:
    """Misses that come per replicate (shared faces) widen the interval: 10 replicates of 40
    cells, two of which miss 8 cells each -> 0.96 overall; the by-replicate interval is the t
    interval of the 10 means, over twice as wide as Clopper-Pearson over 400 "independent" ones."""
    import numpy as np
    import pandas as pd
    from scipy import stats
    from statsmodels.stats.proportion import proportion_confint

    covered = np.ones((10, 40), dtype=bool)
    covered[3, :8] = covered[7, :8] = False
    cells = pd.DataFrame({"replicate": np.repeat(np.arange(10), 40), "covered": covered.ravel()})
    per = covered.mean(axis=1)
    half = stats.t.ppf(0.975, 9) * per.std(ddof=1) / np.sqrt(10)
    lo, hi = calibration.coverage_by_replicate(cells)
    assert lo == round(per.mean() - half, 4) and hi == min(round(per.mean() + half, 4), 1.0)
    cp = proportion_confint(int(covered.sum()), covered.size, alpha=0.05, method="beta")
    assert hi - lo > 2 * (cp[1] - cp[0])


def test_only_vs_debiased_merges_its_own_key(tmp_path: Path) -> None:
    """``--only vs_debiased``: coverage per plant and dimension, other keys of the file kept."""
    out = tmp_path / "calibration.json"
    kept = {"plants": {"x": 1}, "protocols": {"stylisticbias": {"valid_inference": {"k": 2}}}}
    out.write_text(json.dumps(kept))
    argv = ["--only", "vs_debiased", "--replicates", "2", "--faces", "24", "--population", "60"]
    argv += ["--models", "simulated-weak", "--plants", "null", "--out", str(out)]
    assert calibration.main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["plants"] == {"x": 1}
    section = doc["protocols"]["stylisticbias"]
    assert section["valid_inference"] == {"k": 2}
    study = section["vs_debiased_coverage"]
    assert study["command"].startswith("python -m stylisticbias_dev.bench.calibration --only")
    dims = study["null"]["by_dimension"]
    assert set(dims) == {"age", "body", "ethnicity", "gender"}
    for d in dims.values():
        assert d["n_cells"] == 2 and d["mean_truth"] == 0.0
        lo, hi = d["coverage_ci95"]
        assert lo <= d["coverage"] <= hi
        assert d["coverage"] + d["truth_below_interval"] + d["truth_above_interval"] == 1.0
