"""The calibration benchmark at toy scale: three plants, every table summarised, JSON complete."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_calibration_bench_writes_every_table(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    rc = calibration.main(["--replicates", "2", "--faces", "24", "--population", "60",
                           "--models", "simulated-weak", "--out", str(out)])  # fmt: skip
    assert rc == 0
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
            if name != "vs_debiased":
                assert 0.0 <= summary["fdr"] <= 1.0
        assert t["vs_debiased"]["paper_vs_ci_contains_estimate"] == 1.0
    # the all-null plant has only null cells, and its de-biased VS truth is 0
    assert (
        doc["plants"]["null"]["table12"]["n_null_cells"]
        == doc["plants"]["null"]["table12"]["n_cells"]
    )
    assert doc["plants"]["null"]["vs_debiased"]["n_null_cells"] == 8
