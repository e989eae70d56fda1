"""The stratified exact test of a 2x2 association: Fisher's exact test with one stratum per
sampling unit (Zelen 1971; the exact conditional version of the Cochran-Mantel-Haenszel test).

VIGNETTE's log-odds (Sec. 4.2) and polarity (Sec. 4.4) compare how often an identity is chosen
in two sets of questions (one term vs the other terms; the high- vs the low-valence term) with
Fisher's exact test of the pooled 2x2 table ``[[x_a, n_a - x_a], [x_b, n_b - x_b]]``. Pooling
treats every answer as an independent draw. The answers are not: every composite of one
instance (one photo of each identity) is asked every term, so an instance whose photo makes
an identity more (or less) often chosen for *every* question raises (or lowers) both ``x_a`` and
``x_b`` together, and the pooled table overstates the evidence (its p-values are too small
when the photos differ). This test keeps the paper's hypothesis (odds ratio 1 between the two
sets of questions) and its exact conditional principle, and stratifies by the sampling unit:
conditional on each unit's margins (its answers in each set and its total selections), the
number of set-``a`` selections of unit ``u`` is hypergeometric under the null, whatever the
unit's own selection rate; the statistic ``T = sum_u x_a_u`` has the convolution of those
hypergeometric laws, computed exactly. The two-sided p-value sums the probabilities of every
``t`` no more probable than the observed one (Fisher's rule, SciPy's relative tolerance
``1 + 1e-7``), so one stratum gives exactly :func:`scipy.stats.fisher_exact`'s p.

Stated limitation: the conditioning removes each unit's level, not a unit-specific *difference*
between the two sets (a photo whose person looks friendly but not unfriendly); such effects are
the quantity under test and average out over units only as the units are exchangeable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

#: SciPy's relative tolerance for "no more probable than the observed table"
_RTOL = 1 + 1e-7


def stratified_exact_p(tables: Sequence[Sequence[Sequence[int]]] | np.ndarray) -> float:
    """Two-sided exact p-value of no association in ``tables`` (one 2x2 per stratum,
    ``[[x_a, n_a - x_a], [x_b, n_b - x_b]]``), conditional on every stratum's margins.

    Strata with an empty row or column carry no information and are skipped; with none left
    the p-value is 1. Raises ``ValueError`` on a negative or non-integer cell.
    """
    t = np.asarray(tables, dtype=np.float64).reshape(-1, 2, 2)
    if (t < 0).any() or not np.allclose(t, np.round(t)):
        raise ValueError("stratified_exact_p takes non-negative integer 2x2 tables")
    t = np.round(t).astype(np.int64)
    dist = np.ones(1)
    lo = observed = 0
    for (a, b), (c, d) in t:
        n_a, n_b, m = a + b, c + d, a + c
        support_lo, support_hi = max(0, m - n_b), min(n_a, m)
        if n_a == 0 or n_b == 0 or m == 0 or m == n_a + n_b:
            continue
        k = np.arange(support_lo, support_hi + 1)
        pmf = stats.hypergeom.pmf(k, n_a + n_b, n_a, m)
        dist = np.convolve(dist, pmf / pmf.sum())
        lo += support_lo
        observed += a
    if len(dist) == 1:
        return 1.0
    p_obs = dist[observed - lo]
    return float(min(1.0, dist[dist <= p_obs * _RTOL].sum()))


def stratified_tables(
    x_a: Sequence[int], n_a: Sequence[int], x_b: Sequence[int], n_b: Sequence[int]
) -> np.ndarray:
    """Per-stratum 2x2 tables from selections and appearances in each set of questions."""
    xa, na, xb, nb = (np.asarray(v, dtype=np.int64) for v in (x_a, n_a, x_b, n_b))
    return np.stack([np.stack([xa, na - xa], -1), np.stack([xb, nb - xb], -1)], 1)


def pooled_fisher_p(tables: np.ndarray) -> float:
    """The paper's test: Fisher's exact p of the strata summed into one table."""
    pooled = np.asarray(tables, dtype=np.int64).reshape(-1, 2, 2).sum(axis=0)
    if pooled.sum() == 0:
        return math.nan
    return float(stats.fisher_exact(pooled).pvalue)
