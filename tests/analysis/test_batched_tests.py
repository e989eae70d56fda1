"""Batched rank tests equal SciPy's one call per cell, bit for bit (ties, zeros, both methods)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from stylisticbias.analysis.batched_tests import group_tests, mwu_method, wilcoxon_rows
from stylisticbias.analysis.significance import wilcoxon_method


def _draw(rng: np.random.Generator, n: int, kind: int) -> np.ndarray:
    """phi-like shares of 12 (many ties and zeros), continuous values, or a mix."""
    if kind == 0:
        x = rng.integers(-12, 13, n) / 12
    elif kind == 1:
        x = rng.normal(size=n)
    else:
        x = rng.integers(-3, 4, n) / 3 + rng.normal(size=n) * (rng.random(n) < 0.5)
    return np.round(x, 12)


def _same(a: float, b: float) -> bool:
    return a == b or (np.isnan(a) and np.isnan(b))


@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_rows_equal_one_call_per_row(correction: bool) -> None:
    rng = np.random.default_rng(1)
    samples = [
        x
        for n in rng.choice([2, 3, 5, 8, 12, 20, 49, 50, 60], size=400)
        if np.any((x := _draw(rng, int(n), int(rng.integers(3)))) != 0)
    ]
    methods = [wilcoxon_method(x) for x in samples]
    assert {"exact", "asymptotic"} <= set(methods)
    got = wilcoxon_rows(samples, methods, correction=correction)
    for x, m, p in zip(samples, methods, got, strict=True):
        want = stats.wilcoxon(x, zero_method="wilcox", correction=correction, method=m).pvalue
        assert _same(float(want), float(p)), (m, x)


def test_group_tests_equal_mannwhitneyu_and_kruskal() -> None:
    rng = np.random.default_rng(2)
    cells = []
    for _ in range(600):
        k = int(rng.choice([2, 2, 3, 4]))
        sizes = rng.choice([1, 2, 3, 5, 7, 8, 9, 10], size=k)  # 8 | 9: the "auto" method's edge
        if rng.random() < 0.5:  # one shape shared by many cells: batched
            sizes = np.repeat(rng.choice([3, 8, 9, 10]), k)
        kind = int(rng.integers(3))
        groups = [_draw(rng, int(s), kind) for s in sizes]
        if np.ptp(np.concatenate(groups)) > 0:
            cells.append(groups)
    two = [c for c in cells if len(c) == 2]
    assert {mwu_method(*c) for c in two} == {"exact", "asymptotic"}
    stat, p = group_tests(cells)
    for groups, s, q in zip(cells, stat, p, strict=True):
        if len(groups) == 2:
            want = stats.mannwhitneyu(groups[0], groups[1], alternative="two-sided")
        else:
            want = stats.kruskal(*groups)
        assert _same(float(want.statistic), float(s)) and _same(float(want.pvalue), float(q))


def test_group_tests_refuse_a_single_group() -> None:
    with pytest.raises(ValueError, match="at least 2 groups"):
        group_tests([[np.array([0.1, 0.2])]])
