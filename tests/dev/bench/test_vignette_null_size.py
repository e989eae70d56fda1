"""The VIGNETTE null-size bench: its design's counts and its output file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from stylisticbias_dev.bench import vignette_null_size as bench


def test_null_counts_follow_the_design() -> None:
    c = bench.null_counts(np.random.default_rng(0), instances=30, invalid=0.1)
    assert c.shape == (30, 4, 2, 2)
    # every valid answer selects exactly one of the two identities it shows
    assert (c[..., 1].sum(axis=1) == 2 * c[..., 0].sum(axis=1)).all()
    # each identity is shown in 3 pairs x 2 orders per term and instance (fewer when invalid)
    assert (c[..., 1] <= 6).all() and c[..., 1].mean() > 6 * 0.8


def test_cli_writes_both_tests_with_intervals(tmp_path: Path) -> None:
    out = tmp_path / "size.json"
    assert bench.main(["--replicates", "20", "--instances", "10", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["tests"]) == {"stratified", "pooled_fisher"}
    for t in doc["tests"].values():
        assert t["ci95"][0] <= t["fdr"] <= t["ci95"][1]
    assert doc["replicates"] == 20 and len(doc["load_average"]["start"]) == 3
