"""Style x demographic interaction tests behind Tables 4-6 (the paper's released code's
``interaction_tests.py``), from the Table 12 cell sums.

Unit: one Delta per face and variation (the face's mean over scenarios and models). Per table:

* ``ols_interaction`` -- OLS F-test of the style x group interaction with its partial eta^2
  (SS / (SS + SSR_full)): by default within-face (``C(face) + C(style) + C(style):C(group)``
  against ``C(face) + C(style)``); under ``official`` ``delta ~ C(style) * C(group)`` against
  the additive ``delta ~ C(style) + C(group)`` (the released code); rows of one face are not
  independent, so
* ``permutation`` -- the primary test: the face's group label shuffled across faces (each face
  keeps its variations), statistic = mean over styles of the variance (ddof 0) of the group means,
  p = (1 + #{stat_perm >= stat_obs - 1e-12}) / (1 + n_permutations);
* ``mann_whitney`` -- per style, the first vs the last group of the dimension (Table 4: young vs
  elderly; Table 6: thin vs obese; Table 5: young vs elderly, male vs female, thin vs obese for
  each tattoo value), with Cohen's d (pooled SD), BH within the table;
* ``kruskal`` -- per style, Kruskal-Wallis across all groups with >= 3 faces, BH within the table.

The released code runs its style lists (six styles in Table 4, five in Table 6); here every style
of the table is tested.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.metrics import CellSums
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import p_adjust
from stylisticbias.analysis.table_registry import spec
from stylisticbias.benchmark import Benchmark

log = logging.getLogger(__name__)

COLUMNS = spec("interaction_tests").built_columns


def face_style_matrix(
    sums: CellSums, col: str, styles: list[tuple[str, str]]
) -> tuple[np.ndarray, np.ndarray]:
    """(faces x styles) face mean Delta per variation (NaN where absent) and each face's group
    in the dimension ``col`` (None where the face has none of these variations)."""
    keys = sums.keys
    attr, val = keys["attribute"].astype(str).to_numpy(), keys["value"].astype(str).to_numpy()
    grp = keys[col].astype(str).to_numpy()
    nf = sums.num.shape[0]
    x = np.full((nf, len(styles)), np.nan)
    label = np.full(nf, None, dtype=object)
    for j, (a, v) in enumerate(styles):
        m = (attr == a) & (val == v)
        num, den = sums.num[:, m].sum(axis=1), sums.den[:, m].sum(axis=1)
        has = den > 0
        x[has, j] = num[has] / den[has]
        for g in pd.unique(grp[m]):
            label[sums.den[:, m & (grp == g)].sum(axis=1) > 0] = g
    return x, label


def _long(x: np.ndarray, label: np.ndarray, names: list[str]) -> pd.DataFrame:
    f, j = np.nonzero(np.isfinite(x))
    return pd.DataFrame(
        {"face": f, "style": np.asarray(names)[j], "group": label[f], "delta": x[f, j]}
    )


def ols_interaction(df: pd.DataFrame, within_face: bool = True) -> dict:
    """F-test of the style x group interaction (OLS, face x style rows).

    ``within_face`` (default): both fits carry a fixed effect per face (``C(face)`` absorbs the
    group's main effect), so the interaction -- a within-face contrast -- is tested against the
    within-face residual, the split-plot error. ``False`` (``analysis.definitions: official``,
    the released code): ``C(style) * C(group)`` against ``C(style) + C(group)`` with the faces'
    own spread in the residual, which makes the test conservative when faces differ (null
    false-positive rate 0 in ``protocols.stylisticbias.valid_inference.tables``).
    """
    import statsmodels.formula.api as smf

    nan = {
        "statistic": np.nan,
        "df_num": np.nan,
        "df_den": np.nan,
        "partial_eta2": np.nan,
        "pval": np.nan,
    }
    if len(df) < 20 or df["group"].nunique() < 2 or df["style"].nunique() < 2:
        return nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if within_face:
            full = smf.ols("delta ~ C(face) + C(style) + C(style):C(group)", df).fit()
            red = smf.ols("delta ~ C(face) + C(style)", df).fit()
        else:
            full = smf.ols("delta ~ C(style) * C(group)", df).fit()
            red = smf.ols("delta ~ C(style) + C(group)", df).fit()
    df_num, df_den = red.df_resid - full.df_resid, full.df_resid
    ss = red.ssr - full.ssr
    if df_num <= 0 or df_den <= 0 or full.ssr <= 0:
        return nan
    f = (ss / df_num) / (full.ssr / df_den)
    return {
        "statistic": f,
        "df_num": df_num,
        "df_den": df_den,
        "partial_eta2": ss / (ss + full.ssr),
        "pval": float(stats.f.sf(f, df_num, df_den)),
    }


def _interaction_stat(x: np.ndarray, onehot: np.ndarray) -> np.ndarray:
    """Mean over styles of the variance of the group means; onehot (..., faces, groups)."""
    has = np.isfinite(x)
    xs = np.where(has, x, 0.0)
    s = np.einsum("...fk,fs->...ks", onehot, xs)
    c = np.einsum("...fk,fs->...ks", onehot, has.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(c > 0, s / np.where(c > 0, c, 1.0), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        n_groups = np.isfinite(means).sum(axis=-2)
        var = np.where(n_groups >= 2, np.nanvar(means, axis=-2), np.nan)
        return np.nanmean(var, axis=-1)


def permutation_interaction(
    x: np.ndarray, label: np.ndarray, n_permutations: int, seed: int
) -> tuple[float, float]:
    """The face-label permutation test of the interaction (statistic, p)."""
    keep = np.array([g is not None for g in label])
    x, label = x[keep], label[keep]
    groups = list(pd.unique(label))
    if len(groups) < 2 or len(label) < 6:
        return np.nan, np.nan
    codes = np.array([groups.index(g) for g in label])
    eye = np.eye(len(groups))
    obs = float(_interaction_stat(x, eye[codes]))
    if not np.isfinite(obs):
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((n_permutations, len(codes))), axis=1)
    null = _interaction_stat(x, eye[codes[perm]])
    ok = np.isfinite(null)
    return obs, float((1 + np.sum(null[ok] >= obs - 1e-12)) / (1 + ok.sum()))


def cohens_d(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's d of two independent samples with the pooled SD (ddof 1)."""
    if len(a) < 2 or len(b) < 2:
        return np.nan
    sp = np.sqrt(
        ((len(a) - 1) * np.var(a, ddof=1) + (len(b) - 1) * np.var(b, ddof=1))
        / (len(a) + len(b) - 2)
    )
    return float((np.mean(a) - np.mean(b)) / sp) if sp > 0 else np.nan


def _style_tests(
    df: pd.DataFrame, table: str, dim: str, pairs: list[tuple[str, str]], groups: list[str]
) -> list[dict]:
    rows = []
    for style, sdf in df.groupby("style", sort=False):
        for gx, gy in pairs:
            a = sdf.loc[sdf["group"] == gx, "delta"].to_numpy()
            b = sdf.loc[sdf["group"] == gy, "delta"].to_numpy()
            if len(a) < 3 or len(b) < 3:
                continue
            r = stats.mannwhitneyu(a, b, alternative="two-sided")
            rows.append(
                {
                    "table": table,
                    "test": "mann_whitney",
                    "variation": style,
                    "dimension": dim,
                    "group_x": gx,
                    "group_y": gy,
                    "statistic": float(r.statistic),
                    "cohens_d_pooled": cohens_d(a, b),
                    "pval": float(r.pvalue),
                    "n": len(a) + len(b),
                    "n_faces": len(a) + len(b),
                }
            )
        samples = [sdf.loc[sdf["group"] == g, "delta"].to_numpy() for g in groups]
        samples = [v for v in samples if len(v) >= 3]
        if len(samples) >= 2:
            h = stats.kruskal(*samples)
            n = int(sum(len(v) for v in samples))
            rows.append(
                {
                    "table": table,
                    "test": "kruskal",
                    "variation": style,
                    "dimension": dim,
                    "statistic": float(h.statistic),
                    "pval": float(h.pvalue),
                    "n": n,
                    "n_faces": n,
                }
            )
    return rows


def interaction_tests(
    t12_sums: dict[str, CellSums],
    benchmark: Benchmark,
    s: AnalysisSettings,
    dimensions: dict[str, str],
) -> pd.DataFrame:
    """Every interaction test of Tables 4, 5 and 6 (see the module docstring)."""
    fashion = [
        (v.attribute, v.value, v.label)
        for v in benchmark.variations
        if v.evaluated and v.category == s.fashion_category
    ]
    tattoo = [
        (v.attribute, v.value, v.label)
        for v in benchmark.variations
        if v.evaluated and v.category == s.tattoo_category
    ]
    plan = [
        ("Table 4", fashion, ["age"]),
        ("Table 6", fashion, ["body"]),
        ("Table 5", tattoo, ["age", "gender", "body"]),
    ]
    out: list[dict] = []
    for table, vals, dims in plan:
        if not vals:
            continue
        rows: list[dict] = []
        for dim in dims:
            col = dimensions[dim]
            groups = [str(g) for g in benchmark.demographics[col]]
            x, label = face_style_matrix(t12_sums[dim], col, [(a, v) for a, v, _ in vals])
            df = _long(x, label, [lab for _, _, lab in vals]).dropna(subset=["group"])
            n, nf = len(df), int(df["face"].nunique())
            if len(vals) >= 2:
                rows.append(
                    {
                        "table": table,
                        "test": "ols_interaction",
                        "variation": "all",
                        "dimension": dim,
                        **ols_interaction(df, within_face=not s.official),
                        "n": n,
                        "n_faces": nf,
                    }
                )
                stat, p = permutation_interaction(x, label, s.n_permutations, s.seed)
                rows.append(
                    {
                        "table": table,
                        "test": "permutation",
                        "variation": "all",
                        "dimension": dim,
                        "statistic": stat,
                        "pval": p,
                        "n": n,
                        "n_faces": nf,
                    }
                )
            rows += _style_tests(df, table, dim, [(groups[0], groups[-1])], groups)
        t = pd.DataFrame(rows, columns=COLUMNS)
        for test in ("mann_whitney", "kruskal"):
            m = (t["test"] == test).to_numpy()
            t.loc[m, "pval_corr"] = p_adjust(t.loc[m, "pval"].to_numpy(float), s.correction)
        m = t["test"].isin(["ols_interaction", "permutation"]).to_numpy()
        t.loc[m, "pval_corr"] = t.loc[m, "pval"]
        out.extend(t.to_dict("records"))
    log.info("interaction tests (Tables 4-6): %d rows", len(out))
    return pd.DataFrame(out, columns=COLUMNS)
