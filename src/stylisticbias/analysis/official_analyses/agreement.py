"""Agreement of the models' per-scenario SBS: Kendall's W, ICC(2,1), ICC(3,1), pairwise
Spearman, each with a bootstrap CI over scenarios (one set of scenario resamples for all of them;
the pairwise Spearman replicates all at once, :func:`spearman_boot`).

Under ``analysis.definitions: official`` the inputs are the released ``category_agreement.py``'s:
every statistic reads |SBS| per scenario (the mean |Delta| it plots), and Kendall's W ranks the
four scenario categories (the mean |SBS| over each category's scenarios, the released
categories) per model rather than the 25 scenarios, without a tie correction, as it does; its
p-value is the chi-square approximation and the ICCs' intervals the bootstrap over scenarios.

Under the default definitions, W's p-value is a permutation test (:func:`kendalls_w_permutation`:
the chi-square approximation is far too conservative with a few models) and the ICCs' intervals
are the F-distribution intervals (:func:`icc_ci`)."""

from __future__ import annotations

import logging
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.bootstrap import percentile_ci
from stylisticbias.analysis.pair_fits import spearman_pairs
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import p_adjust
from stylisticbias.analysis.structure import kendalls_w
from stylisticbias.analysis.table_registry import spec

log = logging.getLogger(__name__)


def _mean_squares(x: np.ndarray) -> tuple[float, float, float]:
    """The two-way ANOVA mean squares ``(rows, columns, error)`` of an (items x raters) matrix."""
    n, k = x.shape
    grand = x.mean()
    ss_r = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_c = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_e = ((x - grand) ** 2).sum() - ss_r - ss_c
    return ss_r / (n - 1), ss_c / (k - 1), ss_e / ((n - 1) * (k - 1))


def icc(x: np.ndarray) -> tuple[float, float]:
    """``(ICC(2,1), ICC(3,1))`` of an (items x raters) matrix (Shrout & Fleiss 1979): two-way
    random effects, absolute agreement; two-way mixed effects, consistency; single rater."""
    n, k = x.shape
    msr, msc, mse = _mean_squares(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        icc2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
        icc3 = (msr - mse) / (msr + (k - 1) * mse)
    return float(icc2), float(icc3)


def icc_ci(x: np.ndarray, ci: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """F-distribution confidence intervals of ``(ICC(2,1), ICC(3,1))`` of an (items x raters)
    matrix at level ``ci``: ICC(3,1) the exact interval from ``MSR / MSE ~ F`` (Shrout &
    Fleiss 1979), ICC(2,1) McGraw & Wong's (1996, case 2A) Satterthwaite interval -- what R's
    ``psych::ICC`` reports. Exact (3,1) or near-exact (2,1) under the normal two-way model,
    unlike a bootstrap over few items (the percentile interval covers a true 0 too rarely)."""
    n, k = x.shape
    msr, msc, mse = _mean_squares(x)
    a2 = (1.0 - ci) / 2.0
    df1, df2 = n - 1, (n - 1) * (k - 1)
    nan2 = (np.nan, np.nan)
    if not (mse > 0 and msr > 0):
        return nan2, nan2
    f_obs = msr / mse
    fl = f_obs / stats.f.ppf(1 - a2, df1, df2)
    fu = f_obs * stats.f.ppf(1 - a2, df2, df1)
    i3 = ((fl - 1) / (fl + k - 1), (fu - 1) / (fu + k - 1))
    i2_hat = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    a = k * i2_hat / (n * (1 - i2_hat))
    b = 1 + k * i2_hat * (n - 1) / (n * (1 - i2_hat))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / df2)
    if not np.isfinite(v) or v <= 0:
        return nan2, (float(i3[0]), float(i3[1]))
    fs_l, fs_u = stats.f.ppf(1 - a2, df1, v), stats.f.ppf(1 - a2, v, df1)
    lo = n * (msr - fs_l * mse) / (fs_l * (k * msc + (k * n - k - n) * mse) + n * msr)
    hi = n * (fs_u * msr - mse) / (k * msc + (k * n - k - n) * mse + n * fs_u * msr)
    return (float(lo), float(hi)), (float(i3[0]), float(i3[1]))


def kendalls_w_permutation(ratings: np.ndarray, n_perm: int, seed: int) -> float:
    """Monte Carlo permutation p-value of Kendall's W of a (raters x items) matrix: each
    rater's ranks permuted over the items independently (the null of no agreement: every
    rater's ordering independent of the others'), ``(1 + #{W* >= W}) / (1 + n_perm)``.

    The chi-square approximation ``m (n - 1) W ~ chi2(n - 1)`` needs many raters; with two or
    three models it is far too conservative. Ties keep their average ranks (the tie-corrected
    denominator is the same in every permutation, so W* >= W is S* >= S)."""
    r = stats.rankdata(np.asarray(ratings, dtype=np.float64), axis=1)
    m, n = r.shape
    centre = m * (n + 1) / 2.0
    s_obs = float(((r.sum(axis=0) - centre) ** 2).sum())
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((n_perm, m, n)), axis=2)
    rp = np.take_along_axis(np.broadcast_to(r, (n_perm, m, n)), perm, axis=2)
    s_perm = ((rp.sum(axis=1) - centre) ** 2).sum(axis=1)
    return float((1 + np.sum(s_perm >= s_obs * (1 - 1e-12))) / (1 + n_perm))


def kendalls_w_released(ratings: np.ndarray) -> tuple[float, float, float]:
    """``(W, chi2, p)`` of a (raters x items) matrix as ``category_agreement.py`` computes it:
    average ranks per rater, W = 12 S / (k^2 (n^3 - n)) with no tie correction, chi2 = k (n-1) W
    on n - 1 degrees of freedom."""
    k, n = ratings.shape
    r = stats.rankdata(ratings, axis=1)
    dev = r.sum(axis=0) - k * (n + 1) / 2.0
    w = 12.0 * float(dev @ dev) / (k**2 * (n**3 - n))
    chi2 = k * (n - 1) * w
    return w, chi2, float(stats.chi2.sf(chi2, n - 1))


def _category_means(x: np.ndarray, cat_index: np.ndarray, n_cats: int) -> np.ndarray:
    """(categories x raters) means of the rows of ``x`` (items x raters) per category."""
    out = np.full((n_cats, x.shape[1]), np.nan)
    for c in range(n_cats):
        m = cat_index == c
        if m.any():
            out[c] = x[m].mean(axis=0)
    return out


def scenario_agreement(
    by_scenario: pd.DataFrame,
    s: AnalysisSettings,
    categories: dict[int, str] | None = None,
) -> pd.DataFrame:
    """Agreement of the models' per-scenario SBS (``model, scenario_id, sbs``; no ``All`` rows):
    Kendall's W, ICC(2,1), ICC(3,1) across all models and Spearman per pair, each with a
    bootstrap CI over scenarios (percentile). Official (module docstring): |SBS|, and W over
    the ``categories`` (scenario id -> category) means."""
    wide = by_scenario.pivot(index="scenario_id", columns="model", values="sbs").dropna()
    official = s.official and bool(categories)
    if official:
        wide = wide.abs()
        wide = wide[[i in categories for i in wide.index]]
    cols = spec("scenario_agreement").built_columns
    if wide.shape[1] < 2 or len(wide) < 3:
        log.warning("scenario agreement: fewer than two models or three scenarios")
        return pd.DataFrame(columns=cols)
    x = wide.to_numpy(np.float64)
    n = len(wide)
    rng = np.random.default_rng(s.seed)
    idx = rng.integers(0, n, size=(s.n_resamples, n)) if s.n_resamples else None

    def ci(fn) -> tuple[float, float]:
        if idx is None:
            return np.nan, np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            boot = np.array([_safe(fn, x[i]) for i in idx])
        l_, h_ = percentile_ci(boot[:, None], s.ci)
        return float(l_[0]), float(h_[0])

    rows = []
    if official:
        labels = [categories[i] for i in wide.index]
        names = list(dict.fromkeys(labels))
        ci_ = np.array([names.index(c) for c in labels])
        cat = _category_means(x, ci_, len(names))
        w, chi2, p = kendalls_w_released(cat.T)

        def w_of(i: np.ndarray) -> float:
            c = _category_means(x[i], ci_[i], len(names))
            return kendalls_w_released(c.T)[0] if np.isfinite(c).all() else np.nan

        lo, hi = np.nan, np.nan
        if idx is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                boot = np.array([w_of(i) for i in idx])
            l_, h_ = percentile_ci(boot[:, None], s.ci)
            lo, hi = float(l_[0]), float(h_[0])
        rows.append(("kendall_w", "all", "all", w, lo, hi, chi2, p, len(names)))
    else:
        w, chi2, p = kendalls_w(x.T)
        if not s.official:  # the permutation p (module docstring)
            p = kendalls_w_permutation(x.T, s.n_permutations, s.seed)
        rows.append(("kendall_w", "all", "all", w, *ci(lambda m: kendalls_w(m.T)[0]), chi2, p, n))
    i2, i3 = icc(x)
    if s.official:  # the released code's bootstrap over scenarios
        ci2, ci3 = ci(lambda m: icc(m)[0]), ci(lambda m: icc(m)[1])
    else:
        ci2, ci3 = icc_ci(x, s.ci)
    rows.append(("icc_2_1", "all", "all", i2, *ci2, np.nan, np.nan, n))
    rows.append(("icc_3_1", "all", "all", i3, *ci3, np.nan, np.nan, n))
    pairs = []
    # every pair's bootstrap at once, from the same scenario resamples as W and the ICCs
    boot_rho = spearman_boot(x, idx) if idx is not None else None
    pair_list = list(combinations(range(x.shape[1]), 2))
    los = his = np.full(len(pair_list), np.nan)
    if boot_rho is not None and pair_list:  # every pair's percentile interval in one call
        ia, ib = (np.array(v) for v in zip(*pair_list, strict=True))
        los, his = percentile_ci(boot_rho[:, ia, ib], s.ci)
    rhos, prs = spearman_pairs(x, pair_list)
    for (a, b), lo, hi, rho, pr in zip(
        pair_list, los.tolist(), his.tolist(), rhos, prs, strict=True
    ):
        pairs.append(
            (
                "spearman",
                str(wide.columns[a]),
                str(wide.columns[b]),
                float(rho),
                lo,
                hi,
                float(rho),
                float(pr),
                n,
            )
        )
    out = pd.DataFrame(rows + pairs, columns=[c for c in cols if c != "pval_corr"])
    sp = out["measure"] == "spearman"
    out["pval_corr"] = out["pval"]
    out.loc[sp, "pval_corr"] = p_adjust(out.loc[sp, "pval"].to_numpy(), s.correction)
    return out[cols]


def spearman_boot(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Spearman's rho of every pair of columns of ``x`` (items x raters) in every resample of
    its rows ``idx`` (resamples x items): (resamples, raters, raters).

    What ``scipy.stats.spearmanr(x[i, a], x[i, b])`` gives per resample ``i`` and pair (the
    Pearson correlation of the tie-averaged ranks; NaN where a column is constant), from one
    ranking of all resamples and columns instead of a call per resample and pair
    (tests/analysis/test_official_analyses.py compares the two).
    """
    r = stats.rankdata(x[idx], axis=1)  # (B, items, raters): average ranks, as spearmanr
    r -= r.mean(axis=1, keepdims=True)
    cov = np.einsum("bna,bnc->bac", r, r)
    sd = np.sqrt(np.einsum("baa->ba", cov))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = cov / (sd[:, :, None] * sd[:, None, :])
    return np.where(np.isfinite(rho), np.clip(rho, -1.0, 1.0), np.nan)


def _safe(fn, m: np.ndarray) -> float:
    try:
        return float(fn(m))
    except (ValueError, ZeroDivisionError, FloatingPointError):
        return np.nan
