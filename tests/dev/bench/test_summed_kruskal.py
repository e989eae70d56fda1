"""The summed Kruskal-Wallis H of Table 4's earlier default (the calibration's comparison)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from stylisticbias_dev.bench.summed_kruskal import midranks, sum_kruskal


def test_midranks_are_scipy_ranks_and_tie_corrections_per_scenario() -> None:
    """Table 4's mid-ranks and tie corrections (vectorised) equal SciPy's per scenario, with
    missing values, a scenario of one value and a scenario of ties only."""
    rng = np.random.default_rng(3)
    d = rng.integers(-3, 4, (30, 6)) / 12.0
    d[rng.random(d.shape) < 0.2] = np.nan
    d[:, 4], d[0, 4] = np.nan, 0.5  # one value: no ranks, no correction
    d[:, 5] = 0.25  # all tied: correction 0
    ranks, tie = midranks(d)
    for s in range(4):
        ok = ~np.isnan(d[:, s])
        x = d[ok, s]
        assert np.array_equal(ranks[ok, s], stats.rankdata(x))
        assert (ranks[~ok, s] == 0).all()
        _, t = np.unique(x, return_counts=True)
        assert tie[s] == pytest.approx(1 - (t**3 - t).sum() / (len(x) ** 3 - len(x)), abs=0)
    assert (ranks[:, 4] == 0).all() and tie[4] == 0.0
    assert tie[5] == 0.0


def test_sum_kruskal_is_the_sum_of_scipys_kruskal_over_scenarios() -> None:
    """Against SciPy per scenario (groups by a 0/1/2 label, missing values left out), and a
    stack of memberships gives one sum per permutation."""
    rng = np.random.default_rng(5)
    d = rng.integers(-4, 5, (40, 5)) / 12.0
    d[rng.random(d.shape) < 0.15] = np.nan
    label = rng.integers(0, 3, 40)
    ranks, tie = midranks(d)
    present = (~np.isnan(d)).astype(float)
    onehot = (label == np.arange(3)[:, None]).astype(float)
    ref = 0.0
    for s in range(d.shape[1]):
        ok = ~np.isnan(d[:, s])
        ref += stats.kruskal(*(d[ok & (label == g), s] for g in range(3))).statistic
    assert sum_kruskal(ranks, present, tie, onehot) == pytest.approx(ref, rel=1e-12)
    stack = np.stack([onehot, onehot[[1, 2, 0]]])
    got = sum_kruskal(ranks, present, tie, stack)
    assert got[0] == pytest.approx(ref, rel=1e-12) and got.shape == (2,)
