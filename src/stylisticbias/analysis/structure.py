"""Cross-variation and cross-model structure: Pareto of |SBS| (Fig. 2), cross-model variance
per scenario (Fig. 7), model-pair regressions (Fig. 8), profile agreement (Fig. 6, beyond)."""

from __future__ import annotations

import logging
from itertools import combinations, permutations

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.pair_fits import kendalls_w, line_fit, spearman_pairs, two_sided_p
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import p_adjust

log = logging.getLogger(__name__)

_D = AnalysisSettings  # the settings' defaults (conf/analysis/default.yaml mirrors them)


def pareto(
    effects: pd.DataFrame, *, key: str = "variation", share: float = _D.pareto_share
) -> tuple[pd.DataFrame, int]:
    """Cumulative |SBS| over variations sorted by magnitude (Fig. 2).

    ``effects`` has one row per variation with ``key`` and ``abs_effect``. Returns the sorted
    frame with ``rank, cum_abs_effect, cum_share, within_threshold`` and the number of
    variations needed to reach ``share`` of the total.
    """
    if effects.empty:
        raise ValueError("pareto: no variations")
    if effects["abs_effect"].isna().any():
        raise ValueError(
            "pareto: NaN |SBS| for "
            + ", ".join(map(str, effects.loc[effects["abs_effect"].isna(), key]))
        )
    d = effects.sort_values(["abs_effect", key], ascending=[False, True]).reset_index(drop=True)
    total = d["abs_effect"].sum()
    d.insert(0, "rank", np.arange(1, len(d) + 1))
    d["cum_abs_effect"] = d["abs_effect"].cumsum()
    if total <= 0:
        log.warning("pareto: every |SBS| is 0; cumulative share undefined (NaN)")
        d["cum_share"] = np.nan
        d["within_threshold"] = False
        return d, 0
    d["cum_share"] = d["cum_abs_effect"] / total
    k = int(np.argmax(d["cum_share"].to_numpy() >= share - 1e-12)) + 1
    d["within_threshold"] = d["rank"] <= k
    return d, k


def cross_model_variance(
    per_model: pd.DataFrame, *, ddof: int = 1, quantile: float = _D.disagreement_quantile
) -> pd.DataFrame:
    """Variance across models of the per-scenario SBS (Fig. 7).

    ``per_model`` has ``model, scenario_id, effect``. Returns one row per scenario with
    ``variance, sd, mean_effect, n_models, top_quartile`` (variance >= the ``quantile``).
    """
    wide = per_model.pivot(index="scenario_id", columns="model", values="effect")
    n = wide.notna().sum(axis=1)
    if (n - ddof <= 0).any():
        log.warning("cross_model_variance: fewer than %d model(s) in some scenario: NaN", ddof + 1)
    out = pd.DataFrame(
        {
            "scenario_id": wide.index.to_numpy(),
            "variance": wide.var(axis=1, ddof=ddof).to_numpy(),
            "mean_effect": wide.mean(axis=1).to_numpy(),
            "n_models": n.to_numpy(),
        }
    )
    out["sd"] = np.sqrt(out["variance"])
    thr = np.nanquantile(out["variance"], quantile) if out["variance"].notna().any() else np.nan
    out["top_quartile"] = out["variance"] >= thr
    return out


def _half_columns(halves: pd.DataFrame, item: str, a: str, b: str) -> tuple[np.ndarray, ...] | None:
    """``x0, x1, y0, y1``: model ``a``'s and ``b``'s profile on face half 0 and 1, on the items
    all four have (None when a half is missing)."""
    wide = halves.pivot_table(index=item, columns=["model", "half"], values="effect")
    cols = [(a, 0), (a, 1), (b, 0), (b, 1)]
    if any(c not in wide.columns for c in cols):
        return None
    v = wide[cols].dropna().to_numpy(dtype=np.float64)
    return tuple(v[:, i] for i in range(4))


def _noise_overlap(r00: float, r11: float) -> float:
    """Correlation of the two cross-fitted estimates under no association: the product of the
    same-half correlations between the models (their shared sampling noise), in [0, 1]."""
    r = r00 * r11
    return float(np.clip(r, 0.0, 1.0)) if np.isfinite(r) else 0.0


def cross_fit_line(
    x0: np.ndarray, x1: np.ndarray, y0: np.ndarray, y1: np.ndarray
) -> tuple[float, float, int] | None:
    """Cross-fitted slope of y on x from face halves: the mean of the fits of ``y1`` on ``x0``
    and ``y0`` on ``x1`` (no face in common, so no shared sampling noise), its standard error
    with the two fits' correlation (:func:`_noise_overlap`), and the t degrees of freedom."""
    n = len(x0)
    if n < 3 or np.ptp(x0) == 0 or np.ptp(x1) == 0:
        return None
    f1, f2 = line_fit(x0, y1), line_fit(x1, y0)
    rho = _noise_overlap(np.corrcoef(x0, y0)[0, 1], np.corrcoef(x1, y1)[0, 1])
    se = 0.5 * np.sqrt(f1.stderr**2 + f2.stderr**2 + 2 * rho * f1.stderr * f2.stderr)
    return 0.5 * (f1.slope + f2.slope), float(se), n - 2


def cross_fit_spearman(
    x0: np.ndarray, x1: np.ndarray, y0: np.ndarray, y1: np.ndarray
) -> tuple[float, float] | None:
    """Cross-fitted Spearman correlation (Fisher z scale): the mean z of ``rho(x0, y1)`` and
    ``rho(x1, y0)`` and its standard error ``1.06 / sqrt(n - 3) * sqrt((1 + r) / 2)``, ``r`` the
    two halves' correlation (:func:`_noise_overlap`)."""
    n = len(x0)
    if n <= 3:
        return None
    r1 = stats.spearmanr(x0, y1).statistic
    r2 = stats.spearmanr(x1, y0).statistic
    if not (np.isfinite(r1) and np.isfinite(r2)):
        return None
    lim = 1.0 - 1e-6
    z = 0.5 * (np.arctanh(np.clip(r1, -lim, lim)) + np.arctanh(np.clip(r2, -lim, lim)))
    rho = _noise_overlap(stats.spearmanr(x0, y0).statistic, stats.spearmanr(x1, y1).statistic)
    return float(z), float(1.06 / np.sqrt(n - 3) * np.sqrt((1 + rho) / 2))


def model_pair_regressions(
    per_model: pd.DataFrame,
    *,
    ci: float = _D.ci,
    method: str = "fdr_bh",
    halves: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """For every ordered pair (x, y) of models, OLS of y's per-scenario SBS on x's (Fig. 8).

    Returns ``model_x, model_y, slope, intercept, r, pval, pval_corr, ci_low, ci_high`` (slope
    CI from its t-distribution), ``n`` (scenarios) and ``sign_reversals`` (scenarios whose SBS
    signs differ, both non-zero).

    ``halves`` (``model, half, scenario_id, effect``: the profiles per face half,
    ``beyond_tables.half_profiles``; the default definitions): ``slope``, its CI and ``pval``
    are cross-fitted (:func:`cross_fit_line`) -- both models judge the same photos, so their
    full-sample profiles share sampling noise and the plain OLS test finds a slope where the
    population profiles have none. ``intercept``, ``r`` and ``sign_reversals`` stay the
    full-sample line's (the figure). None (``official``): the full-sample OLS throughout.
    """
    wide = per_model.pivot(index="scenario_id", columns="model", values="effect")
    vals = wide.to_numpy(dtype=np.float64)
    present = ~np.isnan(vals)
    names = list(wide.columns)
    rows = []
    fitted, tstats, dfs = [], [], []
    tcrit: dict[int, float] = {}
    for i, j in permutations(range(len(names)), 2):
        a, b = names[i], names[j]
        both = present[:, i] & present[:, j]
        x, y = vals[both, i], vals[both, j]
        if len(x) < 3 or np.ptp(x) == 0:
            log.warning(
                "regression %s -> %s: %d scenario(s) / constant x: not fitted", a, b, len(x)
            )
            rows.append((a, b, *([np.nan] * 6), len(x), np.nan))
            continue
        r = line_fit(x, y)
        if len(x) not in tcrit:
            tcrit[len(x)] = stats.t.ppf(0.5 + ci / 2, len(x) - 2)
        t = tcrit[len(x)]
        rev = int(np.sum((np.sign(x) * np.sign(y)) < 0))
        slope, se, tstat, df = r.slope, r.stderr, r.tstat, r.df
        if halves is not None:
            cols = _half_columns(halves, "scenario_id", a, b)
            cf = cross_fit_line(*cols) if cols is not None else None
            if cf is None:
                log.warning("regression %s -> %s: no face-half profiles; not tested", a, b)
                rows.append((a, b, *([np.nan] * 6), len(x), rev))
                continue
            slope, se, df = cf
            tstat = slope / se if se > 0 else np.nan
            t = stats.t.ppf(0.5 + ci / 2, df)
        fitted.append(len(rows))
        tstats.append(tstat)
        dfs.append(df)
        rows.append(
            (
                a,
                b,
                slope,
                r.intercept,
                r.rvalue,
                np.nan,  # the p-value: all fits at once below
                slope - t * se,
                slope + t * se,
                len(x),
                rev,
            )
        )
    out = pd.DataFrame(
        rows,
        columns=[
            "model_x",
            "model_y",
            "slope",
            "intercept",
            "r",
            "pval",
            "ci_low",
            "ci_high",
            "n",
            "sign_reversals",
        ],
    )
    if fitted:
        out.loc[fitted, "pval"] = two_sided_p(np.array(tstats), np.array(dfs))
    out.insert(6, "pval_corr", p_adjust(out["pval"].to_numpy(), method))
    return out


def profile_agreement(
    per_model: pd.DataFrame,
    *,
    item: str = "variation",
    ci: float = _D.ci,
    method: str = "fdr_bh",
    halves: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Agreement of the models' attribute profiles (per-``item`` SBS vectors).

    One row per model pair (Spearman rho with Fisher-z CI, se = 1.06 / sqrt(n - 3)) and one
    ``measure = kendall_w`` row across all models. Columns ``measure, model_a, model_b, effect,
    ci_low, ci_high, statistic, pval, pval_corr, n``.

    ``halves`` (``model, half, <item>, effect``; the default definitions): cross-fitted on face
    halves (:func:`cross_fit_spearman`): the models judge the same photos, so their full-sample
    profiles agree through shared sampling noise alone (the plain Spearman test rejected in
    every null replicate of ``protocols.stylisticbias.valid_inference.tables``). Each pair's rho,
    CI and p are then the cross-fitted ones; Kendall's W is ``((k - 1) mean rho + 1) / k`` of the
    cross-fitted rhos with the Bonferroni p of the pairs (no chi-square statistic). None
    (``official``): the full-sample Spearman and Kendall's W chi-square test.
    """
    wide = per_model.pivot(index=item, columns="model", values="effect").dropna()
    rows = []
    z = stats.norm.ppf(0.5 + ci / 2)
    names = list(wide.columns)
    pairs = list(combinations(range(len(names)), 2))
    rhos, ps = spearman_pairs(wide.to_numpy(dtype=np.float64), pairs)
    for (i, j), rho, p in zip(pairs, rhos, ps, strict=True):
        a, b = names[i], names[j]
        n = len(wide)
        lo = hi = np.nan
        if halves is not None:
            cols = _half_columns(halves, item, a, b)
            cf = cross_fit_spearman(*cols) if cols is not None else None
            if cf is None:
                rows.append(("spearman", a, b, np.nan, np.nan, np.nan, np.nan, np.nan, n))
                continue
            zc, se = cf
            rho, p = np.tanh(zc), float(2 * stats.norm.sf(abs(zc) / se))
            lo, hi = np.tanh(zc - z * se), np.tanh(zc + z * se)
        elif n > 3 and abs(rho) < 1:
            se = 1.06 / np.sqrt(n - 3)
            lo, hi = np.tanh(np.arctanh(rho) - z * se), np.tanh(np.arctanh(rho) + z * se)
        rows.append(("spearman", a, b, rho, lo, hi, rho, p, n))
    out = pd.DataFrame(
        rows,
        columns=[
            "measure",
            "model_a",
            "model_b",
            "effect",
            "ci_low",
            "ci_high",
            "statistic",
            "pval",
            "n",
        ],
    )
    out["pval_corr"] = p_adjust(out["pval"].to_numpy(), method)
    if wide.shape[1] >= 2 and len(wide) >= 2:
        w, chi2, p = kendalls_w(wide.to_numpy().T)
        if halves is not None:
            k = wide.shape[1]
            rho = out["effect"].to_numpy(dtype=np.float64)
            pp = out["pval"].to_numpy(dtype=np.float64)
            ok = np.isfinite(rho) & np.isfinite(pp)
            w = ((k - 1) * rho[ok].mean() + 1) / k if ok.any() else np.nan
            chi2 = np.nan
            p = min(1.0, len(pairs) * pp[ok].min()) if ok.any() else np.nan
        out = pd.concat(
            [
                out,
                pd.DataFrame(
                    [
                        {
                            "measure": "kendall_w",
                            "model_a": "all",
                            "model_b": "all",
                            "effect": w,
                            "ci_low": np.nan,
                            "ci_high": np.nan,
                            "statistic": chi2,
                            "pval": p,
                            "pval_corr": p,
                            "n": len(wide),
                        }
                    ]
                ),
            ],
            ignore_index=True,
        )
    else:
        log.warning("profile_agreement: fewer than two models: no agreement measures")
    return out[
        [
            "measure",
            "model_a",
            "model_b",
            "effect",
            "ci_low",
            "ci_high",
            "statistic",
            "pval",
            "pval_corr",
            "n",
        ]
    ]
