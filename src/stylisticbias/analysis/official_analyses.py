"""Analyses of the paper's released code that the paper's tables do not show.

Each is a registered table (``analysis.table_registry``), written by the ``analyze`` stage,
shown in the report and logged to MLflow; docs/statistics.md ("Beyond the paper: the released
code's analyses") documents them. Definitions follow the released code
(``timo-cavelius/StylisticBias``, ``src/evaluation/``) with the fixes named below:

* :func:`mixed_effects` / :func:`effect_sizes` -- Delta averaged to face x variation category x
  scenario category, ``delta ~ C(variation_category) + C(scenario_category)`` with a random
  intercept per face (statsmodels ``mixedlm``, REML, L-BFGS); partial eta^2 per factor from nested
  OLS fits (SS = SSR_reduced - SSR_full; eta2p = SS / (SS + SSR_full); F, p), demographic eta2p
  from one-way OLS on each face's mean Delta, with face-bootstrap CIs. Marginal R^2 (Nakagawa):
  var(X beta) / (var(X beta) + sigma2_face + sigma2_resid) -- the released code's
  var(fittedvalues - resid) is not the fixed-effect variance (it is reported beside it as
  ``r2_marginal_released``). A face variance estimated at 0 (or a fit that fails) is the
  OLS fit: the mixed model with sigma2_face = 0 (``method`` says which).
* :func:`negativity_asymmetry` -- the released code's five positive/negative variation pairs:
  per face |Delta_neg| - |Delta_pos| (face means over the pair's rows, models pooled), one-sided
  Wilcoxon (greater), BH over the pairs (a pair with < 3 faces as p = 1), ratio of the median
  |Delta|s with a face-bootstrap CI.
* :func:`scenario_agreement` -- the models' per-scenario SBS: Kendall's W, ICC(2,1) (two-way
  random, absolute agreement) and ICC(3,1) (two-way mixed, consistency; the released code calls
  this one "ICC(2,1)"), pairwise Spearman; bootstrap CIs over scenarios.
* :func:`base_preference` / :func:`preference_summary` -- the absolute-preference screen of the
  base faces (per model x scenario: z = |mean phi - 0.5| / (sd / sqrt(n)) >= 3.29,
  |mean phi - 0.5| >= 0.20, n >= 50) and the |Delta| >= 0.5 / >= 0.75 tail rates.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci
from stylisticbias.analysis.interactions import interaction_tests
from stylisticbias.analysis.metrics import CellSums
from stylisticbias.analysis.official import adjust_untested_as_one
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import TIE_DECIMALS, p_adjust
from stylisticbias.analysis.structure import kendalls_w
from stylisticbias.analysis.table_registry import spec
from stylisticbias.benchmark import Benchmark

log = logging.getLogger(__name__)

#: The released code's scenario categories (``mixed_effects_eta2.py``), used under
#: ``analysis.definitions: official``; they differ from Table 1 (docs/statistics.md).
OFFICIAL_SCENARIO_CATEGORIES: dict[str, tuple[int, ...]] = {
    "Personality": (1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
    "Interpersonal": (11, 12, 19, 20, 23, 25),
    "Behavioral": (13, 14, 21, 22),
    "Socioeconomic": (15, 16, 17, 18, 24),
}
#: Attributes the released code's mixed model keeps apart although Table 3 merges them.
OFFICIAL_SPLIT_ATTRIBUTES = ("Hair color", "Hair length")

#: Absolute-preference screen thresholds and the |Delta| tail cut-offs (the released code's).
SCREEN_Z = 3.29
SCREEN_MIN_GAP = 0.20
SCREEN_MIN_N = 50
TAILS = (0.5, 0.75)


@dataclass(frozen=True)
class NegativityPair:
    """A positive/negative variation pair of the negativity-asymmetry test."""

    label: str
    positive: tuple[str, str]  # (attribute, value)
    negative: tuple[str, str]
    gender: str | None = None  # only faces of this gender


#: The released code's five pairs (``negativity_asymmetry.py``), in our attribute names.
NEGATIVITY_PAIRS: tuple[NegativityPair, ...] = (
    NegativityPair(
        "Formal vs Worn",
        ("Fashion style", "Formal / Evening wear"),
        ("Fashion style", "Worn / Distressed clothing"),
    ),
    NegativityPair(
        "Business vs Worn",
        ("Fashion style", "Professional / Business formal"),
        ("Fashion style", "Worn / Distressed clothing"),
    ),
    NegativityPair(
        "Smart Casual vs Streetwear",
        ("Fashion style", "Smart casual"),
        ("Fashion style", "Streetwear"),
    ),
    NegativityPair(
        "Hair: Slicked vs Messy", ("Hair style", "Slicked back"), ("Hair style", "Messy")
    ),
    NegativityPair(
        "Makeup vs Acne (female)", ("Makeup", "Heavy"), ("Skin irreg.", "Acne"), "female"
    ),
)

#: the pooled cell sums these analyses read (added to the streaming analysis' groupings)
ATTRIBUTE_SCENARIO = ("attribute", "scenario_id")


# ---- helpers ----


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def face_groups(t12_sums: dict[str, CellSums], dimensions: dict[str, str]) -> pd.DataFrame:
    """Each face's demographic group per dimension, read off the Table 12 cell sums (a face's
    rows fall in exactly one group of each dimension); index = the face index."""
    out = {}
    for dim, col in dimensions.items():
        cs = t12_sums[dim]
        groups = cs.keys[col].astype(str).to_numpy()
        label = np.full(cs.num.shape[0], None, dtype=object)
        for g in pd.unique(groups):
            has = cs.den[:, groups == g].sum(axis=1) > 0
            label[has] = g
        out[dim] = label
    return pd.DataFrame(out)


def _ols_ssr(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> tuple[float, int]:
    """Residual sum of squares and rank of a (weighted) least-squares fit."""
    if w is not None:
        sw = np.sqrt(w)
        x, y = x * sw[:, None], y * sw
    beta, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
    r = y - x @ beta
    return float(r @ r), int(rank)


def _dummies(values: np.ndarray) -> np.ndarray:
    levels = pd.unique(values)
    return (values[:, None] == levels[None, 1:]).astype(np.float64)


def _eta_row(
    factor: str,
    kind: str,
    x_red: np.ndarray,
    x_full: np.ndarray,
    y: np.ndarray,
    row_face: np.ndarray,
    w_faces: np.ndarray | None,
    ci: float,
) -> dict:
    n = len(y)
    ssr_f, rank_f = _ols_ssr(x_full, y)
    ssr_r, rank_r = _ols_ssr(x_red, y)
    ss, df_num, df_den = ssr_r - ssr_f, rank_f - rank_r, n - rank_f
    ok = ss > 0 and df_num > 0 and ssr_f > 0 and df_den > 0
    eta = ss / (ss + ssr_f) if ok else np.nan
    f = (ss / df_num) / (ssr_f / df_den) if ok else np.nan
    p = float(stats.f.sf(f, df_num, df_den)) if ok else np.nan
    lo = hi = np.nan
    if ok and w_faces is not None:
        boot = np.full(w_faces.shape[0], np.nan)
        for b, wf in enumerate(w_faces):
            w = wf[row_face]
            if (w > 0).sum() <= x_full.shape[1]:
                continue
            sf_, _ = _ols_ssr(x_full, y, w)
            sr_, _ = _ols_ssr(x_red, y, w)
            if sf_ + (sr_ - sf_) > 0:
                boot[b] = max(sr_ - sf_, 0.0) / (max(sr_ - sf_, 0.0) + sf_)
        l_, h_ = percentile_ci(boot[:, None], ci)
        lo, hi = float(l_[0]), float(h_[0])
    return {
        "factor": factor,
        "model_kind": kind,
        "partial_eta2": eta,
        "ci_low": lo,
        "ci_high": hi,
        "statistic": f,
        "df_num": float(df_num),
        "df_den": float(df_den),
        "pval": p,
        "n": n,
    }


# ---- mixed model and effect sizes ----


def mixed_frame(
    attr_scen: CellSums, faces: pd.Index, benchmark: Benchmark, s: AnalysisSettings
) -> pd.DataFrame:
    """Delta averaged to face x variation category x scenario category (``face_id,
    variation_category, scenario_category, delta, rows``), from the ``[attribute, scenario_id]``
    cell sums (models pooled). Categories: Table 3 / Table 1, or the released code's under
    ``definitions: official``."""
    attr_cat = {v.attribute: v.category for v in benchmark.variations}
    if s.official:
        attr_cat |= {a: a for a in OFFICIAL_SPLIT_ATTRIBUTES}
        scen_cat = {i: c for c, ids in OFFICIAL_SCENARIO_CATEGORIES.items() for i in ids}
    else:
        scen_cat = {sc.id: sc.category for sc in benchmark.scenarios}
    keys = attr_scen.keys
    vcat = keys["attribute"].astype(str).map(attr_cat).to_numpy()
    scat = keys["scenario_id"].astype(int).map(scen_cat).to_numpy()
    cell = pd.Series(list(zip(vcat, scat)))
    frames = []
    for (vc, sc), idx in cell.groupby(cell, sort=True).groups.items():
        if vc is None or sc is None or pd.isna(vc) or pd.isna(sc):
            continue
        cols = np.asarray(idx)
        num, den = attr_scen.num[:, cols].sum(axis=1), attr_scen.den[:, cols].sum(axis=1)
        has = den > 0
        frames.append(
            pd.DataFrame(
                {
                    "face_id": faces[has],
                    "variation_category": vc,
                    "scenario_category": sc,
                    "delta": num[has] / den[has],
                    "rows": den[has],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def mixed_effects(df: pd.DataFrame) -> pd.DataFrame:
    """The random-intercept model ``delta ~ C(variation_category) + C(scenario_category) +
    (1 | face)``: fixed effects (``term, estimate, std_err, pval``) and the variance components
    and R^2 rows (``face_variance``, ``residual_variance``, ``r2_marginal``, ``r2_conditional``,
    ``r2_marginal_released``). ``method``: ``mixedlm`` or ``ols`` (face variance at 0)."""
    import statsmodels.formula.api as smf

    formula = "delta ~ C(variation_category) + C(scenario_category)"
    method, res = "mixedlm", None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = smf.mixedlm(formula, df, groups=df["face_id"]).fit(method="lbfgs", maxiter=2000)
        face_var = float(res.cov_re.iloc[0, 0])
        if not np.isfinite(face_var) or face_var <= 1e-12 or not np.isfinite(res.scale):
            raise np.linalg.LinAlgError("face variance estimated at 0")
        fe = res.fe_params
        se = res.bse_fe
        pv = res.pvalues[fe.index]
        resid_var = float(res.scale)
        x = res.model.exog
        fixed = x @ fe.to_numpy()
        released = float(np.var(res.fittedvalues - res.resid, ddof=0))
        released_res = float(np.var(res.resid, ddof=0))
    except (np.linalg.LinAlgError, ValueError) as e:
        log.warning("mixed model: %s; the fit with face variance 0 is OLS", e)
        method = "ols"
        o = smf.ols(formula, df).fit()
        fe, se, pv = o.params, o.bse, o.pvalues
        face_var, resid_var = 0.0, float(o.scale)
        fixed = o.fittedvalues.to_numpy()
        released = float(np.var(o.fittedvalues - o.resid, ddof=0))
        released_res = float(np.var(o.resid, ddof=0))
    var_f = float(np.var(fixed, ddof=0))
    total = var_f + face_var + resid_var
    rows = [
        {"term": str(t), "estimate": float(fe[t]), "std_err": float(se[t]), "pval": float(pv[t])}
        for t in fe.index
    ]
    rel_total = released + face_var + released_res
    extra = {
        "face_variance": face_var,
        "residual_variance": resid_var,
        "r2_marginal": var_f / total if total > 0 else np.nan,
        "r2_conditional": (var_f + face_var) / total if total > 0 else np.nan,
        "r2_marginal_released": released / rel_total if rel_total > 0 else np.nan,
    }
    rows += [
        {"term": k, "estimate": v, "std_err": np.nan, "pval": np.nan} for k, v in extra.items()
    ]
    out = pd.DataFrame(rows)
    out["method"] = method
    out["n"] = len(df)
    out["n_faces"] = df["face_id"].nunique()
    return out[["term", "estimate", "std_err", "pval", "method", "n", "n_faces"]]


def effect_sizes(
    df: pd.DataFrame,
    face_means: pd.DataFrame,
    faces: pd.Index,
    s: AnalysisSettings,
) -> pd.DataFrame:
    """Partial eta^2 with F, p and a face-bootstrap CI: variation and scenario category (nested
    OLS on the face x category x category means), each demographic dimension (one-way OLS on the
    faces' mean Delta, ``face_means``: ``face_id, delta`` and one column per dimension)."""
    w = face_weights(len(faces), s.n_resamples, s.seed) if s.n_resamples else None
    pos = pd.Series(np.arange(len(faces)), index=faces)
    y = df["delta"].to_numpy(np.float64)
    row_face = pos.loc[df["face_id"].astype(str)].to_numpy()
    one = np.ones((len(df), 1))
    dv = _dummies(df["variation_category"].astype(str).to_numpy())
    ds = _dummies(df["scenario_category"].astype(str).to_numpy())
    full = np.hstack([one, dv, ds])
    rows = [
        _eta_row("variation_category", "mixed", np.hstack([one, ds]), full, y, row_face, w, s.ci),
        _eta_row("scenario_category", "mixed", np.hstack([one, dv]), full, y, row_face, w, s.ci),
    ]
    fy = face_means["delta"].to_numpy(np.float64)
    frow = pos.loc[face_means["face_id"].astype(str)].to_numpy()
    fone = np.ones((len(face_means), 1))
    for dim in [c for c in face_means.columns if c not in ("face_id", "delta")]:
        ok = face_means[dim].notna().to_numpy()
        g = face_means[dim].astype(str).to_numpy()[ok]
        rows.append(
            _eta_row(
                dim,
                "one_way",
                fone[ok],
                np.hstack([fone[ok], _dummies(g)]),
                fy[ok],
                frow[ok],
                w,
                s.ci,
            )
        )
    out = pd.DataFrame(rows)
    out["pval_corr"] = p_adjust(out["pval"].to_numpy(), s.correction)
    return out


# ---- negativity asymmetry ----


def negativity_asymmetry(
    gender_sums: CellSums, s: AnalysisSettings, pairs: tuple[NegativityPair, ...] = NEGATIVITY_PAIRS
) -> pd.DataFrame:
    """Per pair: faces with both variations, median |Delta| of each, their ratio (face-bootstrap
    CI), one-sided Wilcoxon of |Delta_neg| - |Delta_pos| > 0, BH over the pairs."""
    keys = gender_sums.keys
    attr, val = keys["attribute"].astype(str).to_numpy(), keys["value"].astype(str).to_numpy()
    gen = keys["gender"].astype(str).to_numpy()
    rng = np.random.default_rng(s.seed)
    rows = []
    for pr in pairs:

        def face_mean(av: tuple[str, str], pr: NegativityPair = pr) -> np.ndarray:
            m = (attr == av[0]) & (val == av[1])
            if pr.gender is not None:
                m &= gen == pr.gender
            return _ratio(gender_sums.num[:, m].sum(axis=1), gender_sums.den[:, m].sum(axis=1))

        pos, neg = face_mean(pr.positive), face_mean(pr.negative)
        both = np.isfinite(pos) & np.isfinite(neg)
        # rounded as every test here rounds (equal shifts tie whatever the summation order)
        ap = np.round(np.abs(pos[both]), TIE_DECIMALS)
        an = np.round(np.abs(neg[both]), TIE_DECIMALS)
        n = int(both.sum())
        p = stat = ratio = lo = hi = np.nan
        mp = float(np.median(ap)) if n else np.nan
        mn = float(np.median(an)) if n else np.nan
        if n:
            ratio = mn / mp if mp > 0 else np.nan
        if n >= 3 and np.any(an - ap != 0):
            r = stats.wilcoxon(an - ap, zero_method="wilcox", alternative="greater")
            stat, p = float(r.statistic), float(r.pvalue)
        if n >= 2 and s.n_resamples:
            idx = rng.integers(0, n, size=(s.n_resamples, n))
            bp, bn = np.median(ap[idx], axis=1), np.median(an[idx], axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = np.where(bp > 0, bn / np.where(bp > 0, bp, 1.0), np.nan)
            l_, h_ = percentile_ci(boot[:, None], s.ci)
            lo, hi = float(l_[0]), float(h_[0])
        rows.append(
            {
                "pair": pr.label,
                "positive_variation": " / ".join(pr.positive),
                "negative_variation": " / ".join(pr.negative),
                "n_faces": n,
                "median_abs_pos": mp,
                "median_abs_neg": mn,
                "ratio": ratio,
                "ci_low": lo,
                "ci_high": hi,
                "statistic": stat,
                "pval": p,
            }
        )
    out = pd.DataFrame(rows)
    out["pval_corr"] = adjust_untested_as_one(
        out["pval"].to_numpy(), out["n_faces"].to_numpy() > 0, s.correction
    )
    return out


# ---- cross-model agreement ----


def icc(x: np.ndarray) -> tuple[float, float]:
    """``(ICC(2,1), ICC(3,1))`` of an (items x raters) matrix (Shrout & Fleiss 1979): two-way
    random effects, absolute agreement; two-way mixed effects, consistency; single rater."""
    n, k = x.shape
    grand = x.mean()
    ss_r = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_c = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_e = ((x - grand) ** 2).sum() - ss_r - ss_c
    msr, msc, mse = ss_r / (n - 1), ss_c / (k - 1), ss_e / ((n - 1) * (k - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        icc2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
        icc3 = (msr - mse) / (msr + (k - 1) * mse)
    return float(icc2), float(icc3)


def scenario_agreement(by_scenario: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """Agreement of the models' per-scenario SBS (``model, scenario_id, sbs``; no ``All`` rows):
    Kendall's W, ICC(2,1), ICC(3,1) across all models and Spearman per pair, each with a
    bootstrap CI over scenarios (percentile)."""
    wide = by_scenario.pivot(index="scenario_id", columns="model", values="sbs").dropna()
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
    w, chi2, p = kendalls_w(x.T)
    rows.append(("kendall_w", "all", "all", w, *ci(lambda m: kendalls_w(m.T)[0]), chi2, p, n))
    i2, i3 = icc(x)
    rows.append(("icc_2_1", "all", "all", i2, *ci(lambda m: icc(m)[0]), np.nan, np.nan, n))
    rows.append(("icc_3_1", "all", "all", i3, *ci(lambda m: icc(m)[1]), np.nan, np.nan, n))
    pairs = []
    for a, b in combinations(range(x.shape[1]), 2):
        rho, pr = stats.spearmanr(x[:, a], x[:, b])
        lo, hi = ci(lambda m, a=a, b=b: stats.spearmanr(m[:, a], m[:, b])[0])
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


def _safe(fn, m: np.ndarray) -> float:
    try:
        return float(fn(m))
    except (ValueError, ZeroDivisionError, FloatingPointError):
        return np.nan


# ---- the absolute-preference screen and |Delta| tails ----


def base_preference(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model x scenario over the base faces: mean phi, its SD (ddof 1), n, z and the flag
    (z >= 3.29, |mean - 0.5| >= 0.20, n >= 50)."""
    base = scores[scores["is_base"].to_numpy(dtype=bool) & scores["phi"].notna().to_numpy()]
    g = base.groupby([base["model"].astype(str), base["scenario_id"].astype(int)], sort=True)
    out = (
        g["phi"]
        .agg(
            mean_phi="mean",
            phi_sd=lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else np.nan,
            n="size",
        )
        .reset_index()
    )
    gap = (out["mean_phi"] - 0.5).abs()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["z"] = gap / (out["phi_sd"] / np.sqrt(out["n"]))
    out["flagged"] = (
        (out["z"] >= SCREEN_Z) & (gap >= SCREEN_MIN_GAP) & (out["n"] >= SCREEN_MIN_N)
    ).astype(bool)
    return out


def shift_tails(delta: pd.DataFrame) -> pd.DataFrame:
    """Per model: delta rows and how many reach |Delta| >= 0.5 and >= 0.75 (counts)."""
    a = delta["delta"].abs().to_numpy(np.float64)
    m = delta["model"].astype(str).to_numpy()
    rows = []
    for model in sorted(set(m)):
        x = a[m == model]
        rows.append(
            {
                "model": model,
                "n": int(x.size),
                **{f"n_tail_{int(t * 100)}": int((x >= t - 1e-12).sum()) for t in TAILS},
            }
        )
    return pd.DataFrame(rows)


def preference_summary(cells: pd.DataFrame, tails: pd.DataFrame, pooled: str) -> pd.DataFrame:
    """Per model (and pooled): screened cells, flagged cells, bias rate, tail rates."""
    rows = []
    for model, c in cells.groupby("model", sort=True):
        rows.append((model, len(c), int(c["flagged"].sum())))
    scr = pd.DataFrame(rows, columns=["model", "n_cells", "n_flagged"])
    t = tails.copy()
    tot = t.drop(columns="model").sum().to_frame().T
    tot.insert(0, "model", pooled)
    scr_tot = pd.DataFrame(
        [(pooled, int(scr["n_cells"].sum()), int(scr["n_flagged"].sum()))], columns=scr.columns
    )
    out = pd.concat([t, tot], ignore_index=True).merge(
        pd.concat([scr, scr_tot], ignore_index=True), on="model", how="left"
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        out["bias_rate"] = out["n_flagged"].astype(float) / out["n_cells"].astype(float)
        for tl in TAILS:
            tail = out[f"n_tail_{int(tl * 100)}"].astype(float)
            out[f"tail_rate_{int(tl * 100)}"] = tail / out["n"].astype(float)
    return out[["model", "n_cells", "n_flagged", "bias_rate", "tail_rate_50", "tail_rate_75", "n"]]


# ---- all of them ----


def official_analyses(
    pooled: dict[str, CellSums],
    by_scenario: pd.DataFrame,
    base_cells: pd.DataFrame,
    tails: pd.DataFrame,
    faces: pd.Index,
    benchmark: Benchmark,
    s: AnalysisSettings,
    *,
    dimensions: dict[str, str],
    pooled_label: str,
) -> dict[str, pd.DataFrame]:
    """Every table of this module from the pooled cell sums (``t12_<dim>`` and
    ``attribute_scenario``), the per-model per-scenario SBS, the base-face screen cells and the
    tail counts of each model."""
    out: dict[str, pd.DataFrame] = {}
    mf = mixed_frame(pooled["attribute_scenario"], faces, benchmark, s)
    out["mixed_model"] = mixed_effects(mf)
    a = pooled["attribute_scenario"]
    fm = pd.DataFrame({"face_id": faces, "delta": _ratio(a.num.sum(axis=1), a.den.sum(axis=1))})
    groups = face_groups({d: pooled[f"t12_{d}"] for d in dimensions}, dimensions)
    fm = pd.concat([fm, groups], axis=1)
    fm = fm[np.isfinite(fm["delta"].to_numpy(np.float64))].reset_index(drop=True)
    out["effect_sizes"] = effect_sizes(mf, fm, faces, s)
    out["negativity_asymmetry"] = negativity_asymmetry(pooled["t12_gender"], s)
    t12 = {d: pooled[f"t12_{d}"] for d in dimensions}
    out["interaction_tests"] = interaction_tests(t12, benchmark, s, dimensions)
    sc = by_scenario[by_scenario["model"].astype(str) != pooled_label]
    out["scenario_agreement"] = scenario_agreement(sc, s)
    out["base_preference"] = base_cells.reset_index(drop=True)
    out["preference_summary"] = preference_summary(base_cells, tails, pooled_label)
    return {k: df[spec(k).built_columns] for k, df in out.items()}
