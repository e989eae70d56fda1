"""The paired-variation calibration bench: its section is merged, the rest of the file kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias_dev.bench import paired_calibration as bench


def test_merge_keeps_the_other_sections(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    out.write_text(json.dumps({"plants": {"default": {"x": 1}}, "settings": {"r": 30}}))
    bench.merge_into(out, "beauty-and-the-bias", {"halo": {"coverage": 0.95}})
    bench.merge_into(out, "other", {"halo": {"coverage": 0.9}})
    doc = json.loads(out.read_text())
    assert doc["plants"] == {"default": {"x": 1}} and doc["settings"] == {"r": 30}
    assert doc["protocols"]["beauty-and-the-bias"] == {"halo": {"coverage": 0.95}}
    assert set(doc["protocols"]) == {"beauty-and-the-bias", "other"}


def test_paired_dataset_is_one_variation_per_face() -> None:
    b = load_benchmark("beauty-and-the-bias")
    faces, var = bench.paired_dataset(b, 36, seed=1)
    assert len(faces) == len(var) == 36
    assert set(var["value"]) == {"Beautified"} and list(var["face_id"]) == list(faces["face_id"])
    assert faces.groupby(["age", "gender", "ethnicity"]).size().eq(1).all()  # uniform: 36 cells


@pytest.mark.slow
def test_one_replicate_runs(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    assert (
        bench.main(["--replicates", "1", "--faces", "36", "--population", "200", "--out", str(out)])
        == 0
    )
    sec = json.loads(out.read_text())["protocols"]["beauty-and-the-bias"]
    assert sec["halo"]["n_cells"] == 2 * 33 and 0 <= sec["halo"]["coverage"] <= 1
