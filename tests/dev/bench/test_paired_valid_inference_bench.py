"""The valid-inference benchmark of the paired-variation family: its designs, truth and merge."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias_dev.bench import paired_calibration
from stylisticbias_dev.bench import paired_valid_inference as vi


@pytest.fixture(scope="module")
def beauty():
    return load_benchmark("beauty-and-the-bias")


def test_truth_is_the_population_mean_of_the_design(beauty) -> None:
    """The Gauss-Hermite truth equals the mean phi of a large drawn population."""
    design = replace(vi.DESIGNS[1], n_persons=20_000)
    pl = vi.plan(design, beauty)
    data = vi.draw(design, beauty, pl, 0)
    tr = vi.truth(design, beauty, pl)
    phi = data.person_phi()  # (P, S, 2)
    assert np.abs(phi.mean(axis=0) - tr["kind"]).max() < 0.012
    male = data.labels["gender"] == "male"
    got = phi[male].mean(axis=(0, 2))
    assert np.abs(got - tr["by_group"]["gender"][:, 0]).max() < 0.02


def test_one_small_run_reports_every_table_of_both_variants(beauty) -> None:
    design = replace(vi.DESIGNS[1], n_persons=40)
    out = vi.run_design(design, beauty, replicates=2, boot=vi.Bootstrap(20, 0.95, 0))
    for table in ("paired_variation_bias", "paired_group_tests", "paired_stereotype_groups"):
        for label, _ in vi.VARIANTS:
            assert table in out and label in out[table]
    rates = out["paired_group_tests"]["person (default)"]["all_axes"]
    assert rates["null_false_positive_rate"]["alpha_0.05"]["n"] > 0
    assert rates["power_planted"]["alpha_0.05"]["n"] > 0
    assert "paired_subgroup_wilcoxon" in out and "paired_group_bias_by_kind" in out


def test_both_writers_keep_each_others_keys(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"plants": {"x": 1}, "protocols": {"reflect": {"y": 2}}}))
    vi.merge_valid_inference(path, {"designs": {}})
    paired_calibration.merge_into(path, "beauty-and-the-bias", {"halo": {"coverage": 0.95}})
    doc = json.loads(path.read_text())
    assert doc["plants"] == {"x": 1} and doc["protocols"]["reflect"] == {"y": 2}
    sec = doc["protocols"]["beauty-and-the-bias"]
    assert sec["valid_inference"] == {"designs": {}} and sec["halo"] == {"coverage": 0.95}
