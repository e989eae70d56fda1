"""SciPy's two-sided least-squares line and Kendall's W for many inputs, without SciPy's
per-call overhead: the same operations on the same values, so the numbers are SciPy's to the
last bit (tests/analysis/test_pair_fits.py compares them with ``scipy.stats.linregress``
and with a row-by-row ranking). The cross-model step fits every ordered pair of models
(10,100 for 101 models) and bootstraps Kendall's W a thousand times; one ``linregress`` call
costs ~0.25 ms, most of it argument handling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

#: ``scipy.stats.linregress``'s guard against r = +-1 in the t statistic
_TINY = 1.0e-20


@dataclass(frozen=True)
class LineFit:
    """One least-squares line: ``scipy.stats.linregress``'s fields, the p-value left to
    :func:`two_sided_p` (all fits at once) via the t statistic and its degrees of freedom."""

    slope: float
    intercept: float
    rvalue: float
    stderr: float
    tstat: float
    df: int


def line_fit(x: np.ndarray, y: np.ndarray) -> LineFit:
    """``scipy.stats.linregress(x, y)`` for ``len(x) >= 3`` finite values with non-constant
    ``x`` (the caller checks): the same operations in the same order."""
    n = len(x)
    xmean = np.mean(x, None)
    ymean = np.mean(y, None)
    ssxm, ssxym, _, ssym = np.cov(x, y, bias=1).flat
    if ssxm == 0.0 or ssym == 0.0:
        r = np.asarray(np.nan if ssxym == 0 else 0.0)[()]
    else:
        r = ssxym / np.sqrt(ssxm * ssym)
        if r > 1.0:
            r = 1.0
        elif r < -1.0:
            r = -1.0
    slope = ssxym / ssxm
    intercept = ymean - slope * xmean
    df = n - 2
    t = r * np.sqrt(df / ((1.0 - r + _TINY) * (1.0 + r + _TINY)))
    stderr = np.sqrt((1 - r**2) * ssym / ssxm / df)
    return LineFit(slope, intercept, r, stderr, t, df)


def two_sided_p(tstat: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Two-sided Student-t p-values, elementwise as ``linregress`` computes each."""
    return 2 * special.stdtr(np.asarray(df, dtype=np.float64), -np.abs(tstat))


def kendalls_w(ratings: np.ndarray) -> tuple[float, float, float]:
    """Kendall's W of concordance for a (raters x items) matrix (ranks with tie correction).

    Returns ``(W, chi2, pval)`` with ``chi2 = m (n - 1) W`` on ``n - 1`` degrees of freedom.
    All raters are ranked in one call and the ties counted from the sorted ranks at once.
    """
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] < 2 or r.shape[1] < 2:
        raise ValueError(f"kendalls_w needs >= 2 raters x >= 2 items; got shape {r.shape}")
    if not np.isfinite(r).all():
        raise ValueError("kendalls_w: ratings contain NaN")
    m, n = r.shape
    ranks = stats.rankdata(r, axis=1)
    s = ((ranks.sum(axis=0) - m * (n + 1) / 2) ** 2).sum()
    srt = np.sort(ranks, axis=1)
    new = np.ones((m, n), dtype=bool)  # a tie run starts here (every row starts one)
    new[:, 1:] = srt[:, 1:] != srt[:, :-1]
    starts = np.flatnonzero(new.ravel())
    runs = np.diff(np.append(starts, m * n))
    ties = float((runs**3 - runs).sum())
    denom = m**2 * (n**3 - n) - m * ties
    if denom <= 0:
        raise ValueError("kendalls_w: every rater gives all items the same rank")
    w = 12 * s / denom
    chi2 = m * (n - 1) * w
    return float(w), float(chi2), float(stats.chi2.sf(chi2, n - 1))


def spearman_pairs(x: np.ndarray, pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.stats.spearmanr(x[:, a], x[:, b])`` (rho, two-sided p) for each ``(a, b)`` of
    ``pairs``: every column ranked once (a column's ranks do not depend on its partner), the
    correlation of each pair as SciPy takes it (``np.corrcoef`` of the two rank columns) and
    the p-values in one call. Pairs with a constant or non-finite column go to SciPy itself."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    rho = np.full(len(pairs), np.nan)
    p = np.full(len(pairs), np.nan)
    if n <= 1 or not pairs:
        return rho, p
    ranks = np.apply_along_axis(stats.rankdata, 0, x)
    regular = np.isfinite(x).all(axis=0) & (x[0] != x).any(axis=0)
    dof = n - 2
    for k, (a, b) in enumerate(pairs):
        if regular[a] and regular[b]:
            rho[k] = np.corrcoef(np.column_stack((ranks[:, a], ranks[:, b])), rowvar=False)[1, 0]
        else:
            res = stats.spearmanr(x[:, a], x[:, b])
            rho[k], p[k] = res.statistic, res.pvalue
    done = np.array([regular[a] and regular[b] for a, b in pairs])
    if done.any():
        r = rho[done]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = r * np.sqrt((dof / ((r + 1.0) * (1.0 - r))).clip(0))
        p[done] = 2 * special.stdtr(float(dof), -np.abs(t))
    return rho, p
