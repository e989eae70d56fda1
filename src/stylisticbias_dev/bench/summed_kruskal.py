"""The summed Kruskal-Wallis H of Table 4's earlier default (Beauty and the Bias), kept for the
calibration bench's comparison with the default that replaced it
(:func:`stylisticbias.families.paired_variation.analysis.subgroups.sum_welch_anova`): per
scenario the tie-corrected H of the within-person differences between the axis's groups, summed
over scenarios, vectorised over permutations. It assumes one distribution for every group's
differences, so it over-rejects Table 4's null when their spreads differ (the family's README).
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def midranks(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per scenario the mid-ranks of the non-missing values of ``d[f, s]`` (0 where missing) and
    the tie correction ``1 - sum(t^3 - t) / (N^3 - N)`` per scenario (0 where fewer than two
    values). Vectorised: an element in a tie group of size ``t`` has ``max - min + 1 = t``
    ranks, and ``sum(t^3 - t)`` over the groups is ``sum(t_i^2 - 1)`` over the elements."""
    ok = ~np.isnan(d)
    n = ok.sum(axis=0)
    if d.size == 0:
        return np.zeros_like(d, dtype=np.float64), np.zeros(d.shape[1])
    mid = stats.rankdata(d, method="average", axis=0, nan_policy="omit")
    lo = stats.rankdata(d, method="min", axis=0, nan_policy="omit")
    hi = stats.rankdata(d, method="max", axis=0, nan_policy="omit")
    t = np.where(ok, hi - lo + 1.0, 1.0)
    ties = (t**2 - 1.0).sum(axis=0)
    enough = n >= 2
    nn = n.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        tie = np.where(enough, 1.0 - ties / np.where(enough, nn**3 - nn, 1.0), 0.0)
    ranks = np.where(ok & enough[None, :], mid, 0.0)
    return ranks, tie


def sum_kruskal(
    ranks: np.ndarray, present: np.ndarray, tie: np.ndarray, onehot: np.ndarray
) -> np.ndarray:
    """Sum over scenarios of the tie-corrected Kruskal-Wallis H between groups, from mid-ranks
    ``ranks[f, s]`` (0 where missing), ``present[f, s]`` and group memberships
    ``onehot[..., g, f]`` (``(..., G, F)``: a permutation per leading index). Scenarios with
    fewer than two non-empty groups or all values tied add nothing."""
    r = onehot @ ranks  # (..., G, S)
    n = onehot @ present  # (..., G, S)
    big_n = n.sum(axis=-2)  # (..., S)
    with np.errstate(invalid="ignore", divide="ignore"):
        term = np.where(n > 0, r**2 / np.where(n > 0, n, 1.0), 0.0).sum(axis=-2)
        h = 12.0 / (big_n * (big_n + 1.0)) * term - 3.0 * (big_n + 1.0)
        h = h / np.where(tie > 0, tie, 1.0)
    k = (n > 0).sum(axis=-2)
    return np.where((k >= 2) & (tie > 0) & (big_n > 1), h, 0.0).sum(axis=-1)
