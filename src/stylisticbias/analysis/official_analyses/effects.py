"""The released code's mixed model and effect sizes (``mixed_effects_eta2.py``).

Delta averaged to face x variation category x scenario category, ``delta ~
C(variation_category) + C(scenario_category)`` with a random intercept per face (statsmodels
``mixedlm``, REML, L-BFGS); partial eta^2 per factor from nested OLS fits, demographic eta2p from
one-way OLS on each face's mean Delta, with face-bootstrap CIs (the package docstring has the
definitions and the fixes).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci
from stylisticbias.analysis.metrics import CellSums
from stylisticbias.analysis.ols_boot import nested_ssr_boot
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import p_adjust
from stylisticbias.benchmark import Benchmark

log = logging.getLogger(__name__)

#: Attributes the released code's mixed model keeps apart although Table 3 merges them.
OFFICIAL_SPLIT_ATTRIBUTES = ("Hair color", "Hair length")


def cell_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` where ``den > 0``, NaN elsewhere (a mean Delta from cell sums)."""
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
    red_cols: np.ndarray,
    x_full: np.ndarray,
    y: np.ndarray,
    row_face: np.ndarray,
    w_faces: np.ndarray | None,
    ci: float,
    valid: bool = False,
) -> dict:
    """Partial eta^2 of the full design ``x_full`` over its nested ``x_full[:, red_cols]``, F, p
    and a face-bootstrap CI (every resample at once: :func:`.ols_boot.nested_ssr_boot`).

    ``valid`` (the default definitions): the F test of a design with several rows per face
    (``kind == "mixed"``) is the face-clustered Wald test (:func:`cluster_wald_f`), and the
    interval's lower end is 0 whenever the row's test does not reject at ``1 - ci`` (partial
    eta^2 >= 0, so a percentile interval of it never holds a true 0)."""
    n = len(y)
    x_red = x_full[:, red_cols]
    ssr_f, rank_f = _ols_ssr(x_full, y)
    ssr_r, rank_r = _ols_ssr(x_red, y)
    ss, df_num, df_den = ssr_r - ssr_f, rank_f - rank_r, n - rank_f
    ok = ss > 0 and df_num > 0 and ssr_f > 0 and df_den > 0
    eta = ss / (ss + ssr_f) if ok else np.nan
    f = (ss / df_num) / (ssr_f / df_den) if ok else np.nan
    p = float(stats.f.sf(f, df_num, df_den)) if ok else np.nan
    if ok and valid and kind == "mixed":
        test_cols = np.setdiff1d(np.arange(x_full.shape[1]), red_cols)
        f, df_num, df_den, p = cluster_wald_f(x_full, y, row_face, test_cols)
        kind = MIXED_CLUSTER_KIND
    lo = hi = np.nan
    if ok and w_faces is not None:
        sf_, sr_, drawn = nested_ssr_boot(
            x_full, np.arange(x_full.shape[1]), red_cols, y, row_face, w_faces
        )
        ss_b = np.maximum(sr_ - sf_, 0.0)
        ok_b = (drawn > x_full.shape[1]) & (sr_ > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = np.where(ok_b, ss_b / np.where(ok_b, ss_b + sf_, 1.0), np.nan)
        l_, h_ = percentile_ci(boot[:, None], ci)
        lo, hi = float(l_[0]), float(h_[0])
        if valid and not p < 1.0 - ci:
            lo = 0.0
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


#: ``model_kind`` of a category factor under the default definitions (face-clustered Wald F)
MIXED_CLUSTER_KIND = "mixed_cluster_wald"


def cluster_wald_f(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, cols: np.ndarray
) -> tuple[float, float, float, float]:
    """Face-clustered Wald test that the OLS coefficients ``cols`` of ``y ~ x`` are all 0:
    ``(F, q, G - q, p)``.

    ``W`` is statsmodels' Wald statistic with the cluster-robust CR1 covariance (clusters
    ``groups``); ``F = W (G - q) / (q (G - 1))`` on ``(q, G - q)`` degrees of freedom, the
    Hotelling T^2 scaling that keeps the test near its level with few clusters (Cameron & Miller
    2015). One face is one independent unit, whatever the dependence of its rows.
    """
    import statsmodels.api as sm

    codes = pd.factorize(pd.Series(groups))[0]
    g = int(codes.max()) + 1
    q = len(cols)
    if g <= max(q, 1) or len(y) <= x.shape[1]:  # no between-face variance to estimate
        return np.nan, float(q), np.nan, np.nan
    fit = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": codes})
    b = np.asarray(fit.params)[cols]
    v = np.asarray(fit.cov_params())[np.ix_(cols, cols)]
    if not np.isfinite(v).all():
        return np.nan, float(q), np.nan, np.nan
    wald = float(b @ np.linalg.pinv(v) @ b)
    f = wald * (g - q) / (q * (g - 1))
    return f, float(q), float(g - q), float(stats.f.sf(f, q, g - q))


def mixed_frame(
    attr_scen: CellSums, faces: pd.Index, benchmark: Benchmark, s: AnalysisSettings
) -> pd.DataFrame:
    """Delta averaged to face x variation category x scenario category (``face_id,
    variation_category, scenario_category, delta, rows``), from the ``[attribute, scenario_id]``
    cell sums (models pooled). Categories: Table 3 / Table 1, or the released code's under
    ``definitions: official`` (:func:`scenario_categories`)."""
    attr_cat = {v.attribute: v.category for v in benchmark.variations}
    if s.official:
        attr_cat |= {a: a for a in OFFICIAL_SPLIT_ATTRIBUTES}
    scen_cat = scenario_categories(benchmark, s)
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


def scenario_categories(benchmark: Benchmark, s: AnalysisSettings) -> dict[int, str]:
    """Our scenario id -> its category: Table 1's, or under ``definitions: official`` the
    released code's (``mixed_effects_eta2.py``'s index sets, read as indices into its
    ``judgement_scenarios.json``: the protocol's ``released`` section maps them to our ids; they
    differ from Table 1 in two scenarios). A protocol without released categories keeps its own."""
    own = {sc.id: sc.category for sc in benchmark.scenarios}
    if not s.official:
        return own
    rel = benchmark.released.category_of_id() if benchmark.released is not None else {}
    if not rel:
        log.warning("official scenario categories: the protocol names none; using its own")
        return own
    return rel


#: ``method`` suffix of the default (non-official) inference: face-clustered CR1, t(G - 1)
CLUSTER_SUFFIX = "+cr1_face"


def cluster_gls(
    y: np.ndarray, x: np.ndarray, groups: np.ndarray, face_var: float, resid_var: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The random-intercept GLS fit with a face-clustered sandwich: ``(beta, cov, pval, G)``.

    The GLS fit is OLS on the quasi-demeaned data (``v - theta_g * mean_g(v)``, ``theta_g = 1 -
    sqrt(resid_var / (resid_var + n_g face_var))``: the whitening of the random-intercept
    covariance, so ``beta`` is mixedlm's fixed effects at these variance components); its
    covariance is statsmodels' cluster-robust CR1 on the whitened rows clustered by face
    (``G / (G - 1) * (N - 1) / (N - K)``) and the p-values are t on ``G - 1`` degrees of freedom.
    Valid whatever the within-face structure (a face x variation-category effect, photo effects
    shared across scenarios, unequal variances), which the random intercept alone is not.
    """
    import statsmodels.api as sm

    codes, uniq = pd.factorize(pd.Series(groups))
    n_g = np.bincount(codes).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = 1.0 - np.sqrt(resid_var / (resid_var + n_g * max(face_var, 0.0)))
    theta = np.where(np.isfinite(theta), theta, 0.0)[codes]

    def whiten(v: np.ndarray) -> np.ndarray:
        v2 = v.reshape(len(codes), -1)
        sums = np.zeros((len(uniq), v2.shape[1]))
        np.add.at(sums, codes, v2)
        return (v2 - theta[:, None] * (sums / n_g[:, None])[codes]).reshape(v.shape)

    if len(uniq) < 2:  # one face: no between-face variation to estimate the variance from
        k = x.shape[1] if x.ndim == 2 else 1
        beta = np.linalg.lstsq(whiten(x).reshape(len(codes), k), whiten(y), rcond=None)[0]
        return beta, np.full((k, k), np.nan), np.full(k, np.nan), len(uniq)
    fit = sm.OLS(whiten(y), whiten(x)).fit(
        cov_type="cluster", cov_kwds={"groups": codes}, use_t=True
    )
    return (
        np.asarray(fit.params),
        np.asarray(fit.cov_params()),
        np.asarray(fit.pvalues),
        len(uniq),
    )


def mixed_effects(df: pd.DataFrame, cluster: bool = True) -> pd.DataFrame:
    """The random-intercept model ``delta ~ C(variation_category) + C(scenario_category) +
    (1 | face)``: fixed effects (``term, estimate, std_err, pval``) and the variance components
    and R^2 rows (``face_variance``, ``residual_variance``, ``r2_marginal``, ``r2_conditional``,
    ``r2_marginal_released``). ``method``: ``mixedlm`` or ``ols`` (face variance at 0).

    ``cluster`` (the default definitions): the same estimates, but the standard errors and
    p-values are face-clustered (:func:`cluster_gls`; ``method`` gets :data:`CLUSTER_SUFFIX`).
    The model-based ones (``cluster=False``, ``definitions: official``, as the released code)
    assume the random intercept is the only within-face dependence; the variation photo of a
    face x variation category is shared across its scenario categories, so they reject a true
    null several times too often (docs/statistics.md)."""
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
    if cluster:
        model = res.model if method == "mixedlm" else o.model
        _, cov, pvals, _ = cluster_gls(
            np.asarray(model.endog, dtype=np.float64),
            np.asarray(model.exog, dtype=np.float64),
            df["face_id"].astype(str).to_numpy(),
            face_var,
            resid_var,
        )
        se = pd.Series(np.sqrt(np.diag(cov)), index=fe.index)
        pv = pd.Series(pvals, index=fe.index)
        method += CLUSTER_SUFFIX
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
    kv, ks = dv.shape[1], ds.shape[1]
    no_v = np.r_[0, np.arange(1 + kv, 1 + kv + ks)]  # [one, ds]
    no_s = np.arange(1 + kv)  # [one, dv]
    valid = not s.official
    rows = [
        _eta_row("variation_category", "mixed", no_v, full, y, row_face, w, s.ci, valid),
        _eta_row("scenario_category", "mixed", no_s, full, y, row_face, w, s.ci, valid),
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
                np.array([0]),
                np.hstack([fone[ok], _dummies(g)]),
                fy[ok],
                frow[ok],
                w,
                s.ci,
                valid,
            )
        )
    out = pd.DataFrame(rows)
    out["pval_corr"] = p_adjust(out["pval"].to_numpy(), s.correction)
    return out
