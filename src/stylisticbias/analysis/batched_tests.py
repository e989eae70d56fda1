"""Many small rank tests in few SciPy calls.

SciPy's Wilcoxon, Mann-Whitney U and Kruskal-Wallis tests run along the last axis of an array,
so the cells of a table that share their sample sizes (and the method chosen for them) are tested
in one call instead of one call each: SciPy's per-call overhead (~0.3 ms of argument handling)
was most of the time of the demographic and face-level Wilcoxon tests, thousands of calls per
analysis. Each row's result is bit for bit what the call on that row alone returns: the
statistics are sums of ranks (exact in floating point) and the p-values elementwise functions of
them. SciPy's ``method="auto"`` decides once per call from the ties of the whole array, so the
method is fixed per row beforehand -- the one ``"auto"`` picks for that row alone
(:func:`mwu_method`) -- and rows are grouped by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from scipy import stats


def _batches(keys: Iterable[object]) -> dict[object, list[int]]:
    """Row indices by key, keys in order of first appearance."""
    out: dict[object, list[int]] = {}
    for i, k in enumerate(keys):
        out.setdefault(k, []).append(i)
    return out


def wilcoxon_rows(
    samples: Sequence[np.ndarray],
    methods: Sequence[str],
    *,
    zero_method: str = "wilcox",
    correction: bool = False,
) -> np.ndarray:
    """Two-sided Wilcoxon signed-rank p-value of each 1-D sample against 0, each by its method
    (``"exact"`` | ``"asymptotic"``): ``stats.wilcoxon(x, zero_method=..., correction=...,
    method=m).pvalue`` per row."""
    p = np.full(len(samples), np.nan)
    for (_, method), rows in _batches(
        (len(x), m) for x, m in zip(samples, methods, strict=True)
    ).items():
        res = stats.wilcoxon(
            np.stack([samples[i] for i in rows]),
            zero_method=zero_method,
            correction=correction,
            method=method,
            axis=-1,
        )
        p[rows] = res.pvalue
    return p


def mwu_method(a: np.ndarray, b: np.ndarray) -> str:
    """The method ``stats.mannwhitneyu(a, b)`` picks under ``method="auto"``: the normal
    approximation when both samples exceed 8 or any value is tied, else the exact
    distribution."""
    if len(a) > 8 and len(b) > 8:
        return "asymptotic"
    both = np.concatenate([a, b])
    return "asymptotic" if np.unique(both).size < both.size else "exact"


def group_tests(cells: Sequence[Sequence[np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """``(statistic, p)`` per cell of two or more groups: for two groups what
    ``stats.mannwhitneyu(a, b, alternative="two-sided")`` returns (U of the first group), for
    more what ``stats.kruskal(*groups)`` returns (tie-corrected H)."""
    stat = np.full(len(cells), np.nan)
    p = np.full(len(cells), np.nan)

    def key(groups: Sequence[np.ndarray]) -> tuple[object, ...]:
        sizes = tuple(len(g) for g in groups)
        if len(groups) < 2:
            raise ValueError(f"a group test needs at least 2 groups; got {len(groups)}")
        return (sizes, mwu_method(*groups) if len(groups) == 2 else "kruskal")

    for (sizes, method), rows in _batches(key(c) for c in cells).items():
        stacked = [np.stack([cells[i][g] for i in rows]) for g in range(len(sizes))]
        if method == "kruskal":
            res = stats.kruskal(*stacked, axis=-1)
        else:
            res = stats.mannwhitneyu(
                stacked[0], stacked[1], alternative="two-sided", method=method, axis=-1
            )
        stat[rows] = res.statistic
        p[rows] = res.pvalue
    return stat, p
