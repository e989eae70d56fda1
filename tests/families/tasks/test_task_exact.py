"""The stratified exact test against SciPy (one stratum), statsmodels' Mantel-Haenszel test
(many large strata), brute-force enumeration (small strata) and its size under clustering."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import StratifiedTable

from stylisticbias.families.tasks.analysis.exact import (
    pooled_fisher_p,
    stratified_exact_p,
    stratified_tables,
)


@pytest.mark.parametrize(
    "table", [[[3, 7], [8, 2]], [[30, 20], [18, 32]], [[0, 5], [5, 0]], [[1, 0], [0, 1]]]
)
def test_one_stratum_is_fishers_exact_test(table: list[list[int]]) -> None:
    assert stratified_exact_p([table]) == pytest.approx(stats.fisher_exact(table).pvalue)
    assert pooled_fisher_p(np.array([table])) == pytest.approx(stats.fisher_exact(table).pvalue)


def test_many_large_strata_agree_with_mantel_haenszel() -> None:
    rng = np.random.default_rng(0)
    tabs = []
    for _ in range(40):
        n, p = int(rng.integers(30, 60)), rng.uniform(0.2, 0.8)
        a, c = rng.binomial(n, p + 0.04), rng.binomial(n, p - 0.04)
        tabs.append([[a, n - a], [c, n - c]])
    cmh = StratifiedTable(np.array(tabs).transpose(1, 2, 0)).test_null_odds(correction=True)
    got = stratified_exact_p(tabs)
    assert got < 0.05
    assert math.log(got) == pytest.approx(math.log(cmh.pvalue), rel=0.1)


def test_small_strata_equal_brute_force_enumeration() -> None:
    tabs = [[[2, 1], [0, 3]], [[1, 1], [1, 1]], [[3, 0], [1, 2]]]

    # every table with the strata's margins, its probability the product of hypergeometrics
    def tables_of(t: list[list[int]]) -> list[tuple[int, float]]:
        n_a, n_b, m = sum(t[0]), sum(t[1]), t[0][0] + t[1][0]
        return [
            (k, stats.hypergeom.pmf(k, n_a + n_b, n_a, m))
            for k in range(max(0, m - n_b), min(n_a, m) + 1)
        ]

    law: dict[int, float] = {}
    for combo in itertools.product(*(tables_of(t) for t in tabs)):
        k = sum(c[0] for c in combo)
        law[k] = law.get(k, 0.0) + math.prod(c[1] for c in combo)
    obs = law[sum(t[0][0] for t in tabs)]
    want = sum(p for p in law.values() if p <= obs * (1 + 1e-7))
    assert stratified_exact_p(tabs) == pytest.approx(want)


def test_uninformative_strata_and_bad_input() -> None:
    assert stratified_exact_p([[[0, 0], [3, 2]], [[4, 0], [3, 0]]]) == 1.0
    assert stratified_exact_p([[[5, 0], [0, 5]], [[0, 0], [0, 0]]]) == pytest.approx(
        stats.fisher_exact([[5, 0], [0, 5]]).pvalue
    )
    with pytest.raises(ValueError, match="non-negative integer"):
        stratified_exact_p([[[-1, 2], [3, 4]]])
    t = stratified_tables([1, 2], [3, 4], [0, 4], [2, 4])
    assert t.tolist() == [[[1, 2], [0, 2]], [[2, 2], [4, 0]]]


def test_size_under_unit_heterogeneity() -> None:
    """Units that differ in how often the identity is chosen for every question (a photo
    effect, no difference between the two sets): the stratified test keeps its size."""
    rng = np.random.default_rng(3)
    reps, alpha, rej = 400, 0.05, 0
    for _ in range(reps):
        rates = rng.choice([0.1, 0.9], size=30)
        tabs = []
        for p in rates:
            a, c = rng.binomial(6, p), rng.binomial(6, p)
            tabs.append([[a, 6 - a], [c, 6 - c]])
        rej += stratified_exact_p(tabs) < alpha
    ci = stats.binomtest(rej, reps).proportion_ci()
    assert ci.low <= alpha  # exact: the rejection rate is at most alpha
