"""The StylisticBias validity bench pools its tests-only null replicates into the false-positive
rates (not into power or coverage) and keeps the other benches' keys of its JSON section."""

from __future__ import annotations

import json
from pathlib import Path

from stylisticbias_dev.bench import stylisticbias_validity as sv


def _rep(p: float, covered: bool) -> dict:
    return {
        "vs_permutation.gender": p,
        "vs_boundary.gender": covered,
        "vs_boundary_excludes_0.gender": not covered,
    }


def test_null_test_replicates_pool_into_the_false_positive_rates_only() -> None:
    null = [_rep(0.5, True), _rep(0.001, False)]
    eff = [_rep(0.001, True)] * 2
    extra = [_rep(0.03, True), _rep(0.9, True)]
    s = sv.summarise(null, eff, extra)
    t = s["tests"]["vs_permutation.gender"]
    assert t["alpha_0.05"]["null_false_positive"]["k"] == 2
    assert t["alpha_0.05"]["null_false_positive"]["n"] == 4
    assert t["alpha_0.01"]["null_false_positive"]["k"] == 1
    assert t["alpha_0.05"]["power"]["n"] == 2
    assert s["coverage"]["vs_boundary.gender"]["true_spread_0"] == sv._rate(1, 2)


def test_main_keeps_the_tables_key(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    out.write_text(json.dumps({"protocols": {"stylisticbias": {"valid_inference": {"tables": 1}}}}))
    argv = ["--replicates", "2", "--null-test-replicates", "3", "--faces", "30"]
    argv += ["--bootstrap", "10", "--permutations", "9", "--out", str(out)]
    assert sv.main(argv) == 0
    v = json.loads(out.read_text())["protocols"]["stylisticbias"]["valid_inference"]
    assert v["tables"] == 1
    assert v["design"]["null_test_replicates"] == 3
    assert v["tests"]["wilcoxon_faces"]["alpha_0.05"]["null_false_positive"]["n"] == 3
    assert v["tests"]["wilcoxon_faces"]["alpha_0.05"]["power"]["n"] == 2


def test_only_vs_coverage_replaces_the_boundary_coverage_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    """``--only vs_coverage``: the boundary-aware interval's coverage for all four dimensions
    (and the previous resampling's beside it) replaces the main run's; tests, the ``official``
    interval's coverage and the other benches' keys stay."""
    out = tmp_path / "calibration.json"
    vi = {
        "tables": 1,
        "tests": {},
        "coverage": {"vs_tib.gender": "kept", "vs_boundary.gender": "stale"},
    }
    out.write_text(json.dumps({"protocols": {"stylisticbias": {"valid_inference": vi}}}))
    argv = ["--only", "vs_coverage", "--replicates", "2", "--faces", "40"]
    argv += ["--bootstrap", "10", "--permutations", "9", "--out", str(out)]
    assert sv.main(argv) == 0
    v = json.loads(out.read_text())["protocols"]["stylisticbias"]["valid_inference"]
    assert v["tables"] == 1 and v["tests"] == {}
    assert v["coverage"]["vs_tib.gender"] == "kept"
    for d in ("gender", "age", "ethnicity", "body"):
        for key in ("vs_boundary", "vs_boundary_unstratified"):
            c = v["coverage"][f"{key}.{d}"]
            assert c["true_spread_0"]["n"] == 2 and c["planted_spread"]["n"] == 2
        assert v["vs_boundary_excludes_0_power"][f"vs_boundary_excludes_0.{d}"]["n"] == 2
    assert v["vs_coverage_study"]["design"]["replicates"] == 2
