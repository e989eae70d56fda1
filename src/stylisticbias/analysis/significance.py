"""Significance tests as in the paper, pingouin-style: tidy frames, p next to effect sizes.

- :func:`p_adjust` -- multiple-testing correction (``method=`` fdr_bh | bonferroni | holm |
  none); NaN p-values (skipped tests) stay NaN and are not counted in the family.
- :func:`wilcoxon_faces` -- face-level Wilcoxon signed-rank test per cell (Tables 3-6, 12).
- :func:`demographic_tests` -- Kruskal-Wallis / Mann-Whitney U per scenario on base-face phi,
  corrected within each model x dimension (Table 11).
- :func:`marks` -- the paper's marks: ``p<0.001`` (bold), ``p<0.05``, ``ns`` (underlined).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.batched_tests import group_tests, wilcoxon_rows
from stylisticbias.analysis.settings import CORRECTIONS, AnalysisSettings

_D = AnalysisSettings  # the settings' defaults (conf/analysis/default.yaml mirrors them)

log = logging.getLogger(__name__)

#: face means are rounded to this many decimals before ranking, so that ties (frequent: phi is a
#: share of 12 responses) do not depend on floating-point summation order
TIE_DECIMALS = 12


def p_adjust(pvals: Sequence[float] | np.ndarray, method: str = "fdr_bh") -> np.ndarray:
    """Corrected p-values; NaN entries are left out of the family and stay NaN.

    ``fdr_bh`` is Benjamini-Hochberg step-up (monotone, capped at 1), ``bonferroni`` multiplies
    by the family size, ``holm`` is Holm's step-down; ``none`` returns the input.
    """
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction method {method!r}; valid: {', '.join(CORRECTIONS)}")
    p = np.asarray(pvals, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ((p[ok] < 0) | (p[ok] > 1)).any():
        raise ValueError("p-values must lie in [0, 1]")
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    if method == "none":
        adj = q
    elif method == "bonferroni":
        adj = np.minimum(q * m, 1.0)
    else:
        order = np.argsort(q, kind="mergesort")
        ranked = q[order]
        if method == "fdr_bh":
            steps = ranked * m / np.arange(1, m + 1)
            steps = np.minimum.accumulate(steps[::-1])[::-1]
        else:  # holm
            steps = np.maximum.accumulate(ranked * (m - np.arange(m)))
        adj = np.empty(m)
        adj[order] = np.minimum(steps, 1.0)
    out[ok] = adj
    return out


def marks(
    pval_corr: Sequence[float] | np.ndarray,
    alpha: float = _D.alpha,
    strong_alpha: float = _D.strong_alpha,
) -> np.ndarray:
    """The paper's labels: ``p<0.001``, ``p<0.05`` (alpha), ``ns``; ``""`` if untested."""
    p = np.asarray(pval_corr, dtype=np.float64)
    lab_sig = f"p<{alpha:g}"
    lab_strong = f"p<{strong_alpha:g}"
    return np.where(
        ~np.isfinite(p),
        "",
        np.where(p < strong_alpha, lab_strong, np.where(p < alpha, lab_sig, "ns")),
    )


def wilcoxon_faces(
    face_means: np.ndarray,
    *,
    labels: Sequence[str] | None = None,
    min_faces: int = 2,
    zero_method: str = "wilcox",
    correction: bool = False,
    scipy_method: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided one-sample Wilcoxon signed-rank test of each column against 0.

    ``face_means`` is (faces x cells) with NaN where a face has no rows in a cell. Returns
    ``(pval, n_faces)`` per cell. A cell with fewer than ``min_faces`` faces, or whose shifts are
    all exactly zero, is not tested: its p-value is NaN and a warning names the cell.
    ``correction``: continuity correction of the normal approximation (R's ``wilcox.test``
    default is ``correct = TRUE``, SciPy's is False; the paper does not say; setting
    ``analysis.wilcoxon_correction``). The exact test is unaffected. ``scipy_method``: SciPy's
    own ``method="auto"`` (what the paper's released code calls) instead of R's rule
    (:func:`wilcoxon_method`).
    """
    fm = np.asarray(face_means, dtype=np.float64)
    if fm.ndim != 2:
        raise ValueError(f"face_means must be 2-D (faces x cells); got shape {fm.shape}")
    n_cells = fm.shape[1]
    pval = np.full(n_cells, np.nan)
    n = np.isfinite(fm).sum(axis=0)
    few: list[str] = []
    zeros: list[str] = []
    tested: list[int] = []
    samples: list[np.ndarray] = []
    for c in range(n_cells):
        x = fm[:, c]
        x = np.round(x[np.isfinite(x)], TIE_DECIMALS)
        name = labels[c] if labels is not None else str(c)
        if x.size < min_faces:
            if x.size > 0:
                few.append(f"{name} ({x.size} face(s))")
            continue
        if not np.any(x != 0):
            zeros.append(f"{name} ({x.size} faces)")
            continue
        if scipy_method:  # SciPy's "auto" decides per call: one call per cell
            pval[c] = stats.wilcoxon(
                x, zero_method=zero_method, correction=correction, method="auto"
            ).pvalue
        else:
            tested.append(c)
            samples.append(x)
    if tested:  # cells of one size and method in one call
        pval[tested] = wilcoxon_rows(
            samples,
            [wilcoxon_method(x) for x in samples],
            zero_method=zero_method,
            correction=correction,
        )
    if few:
        log.warning(
            "Wilcoxon: %d cell(s) with fewer than min_faces=%d faces, not tested: %s",
            len(few),
            min_faces,
            _listing(few),
        )
    if zeros:
        log.warning(
            "Wilcoxon: %d cell(s) whose face-level shifts are all exactly 0, not tested: %s",
            len(zeros),
            _listing(zeros),
        )
    return pval, n


def _warn_small_groups(base: pd.DataFrame, dimensions: Mapping[str, str]) -> None:
    """One warning listing the demographic groups with fewer than 2 base faces (per model).

    A group of one face has no within-group spread: it still enters VS and the rank tests, but
    its mean is that one face's phi.
    """
    if "face_id" not in base:
        return
    small: list[str] = []
    for model, g in base.groupby("model", sort=True, observed=True):
        for dim, col in dimensions.items():
            counts = g.groupby(col, sort=True, observed=True)["face_id"].nunique()
            small += [f"{model}/{dim}={grp} ({n} face)" for grp, n in counts.items() if n < 2]
    if small:
        log.warning(
            "%d demographic group(s) with fewer than 2 base faces (tests and VS rest on a "
            "single face there; raise faces.n): %s",
            len(small),
            _listing(small),
        )


def _listing(names: Sequence[str], limit: int = 8) -> str:
    """``a; b; c`` -- at most ``limit`` names, then ``... and N more``."""
    shown = "; ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown}; ... and {len(names) - limit} more"


def wilcoxon_method(x: np.ndarray) -> str:
    """R's ``wilcox.test`` rule: exact null distribution for n < 50 without ties or zeros,
    else the normal approximation (with tie correction).

    (SciPy >= 1.15's ``method="auto"`` would fall back to a slow permutation test with ties.)
    """
    a = np.abs(x)
    if x.size < 50 and np.all(a > 0) and np.unique(a).size == a.size:
        return "exact"
    return "asymptotic"


def demographic_tests(
    base: pd.DataFrame,
    dimensions: dict[str, str],
    *,
    method: str = "fdr_bh",
    alpha: float = _D.alpha,
) -> pd.DataFrame:
    """Per model x dimension x scenario: do base-face phi differ across the dimension's groups?

    Kruskal-Wallis H for dimensions with more than two groups present, Mann-Whitney U
    (two-sided) for two groups -- the paper's Table 11 (gender: MWU; age, body, ethnicity: KW).
    P-values are corrected with ``method`` within each model x dimension (the protocol's scenarios).

    Parameters
    ----------
    base : DataFrame
        Base-face score rows: ``model``, ``scenario_id``, ``phi`` and the dimension columns.
    dimensions : dict
        Output dimension name -> column (e.g. ``{"body": "body_type"}``).

    Returns
    -------
    DataFrame with ``model, dimension, scenario_id, test, statistic, n_groups, n, pval,
    pval_corr, significant``. Scenarios where every phi is identical are untested (NaN p, warning).
    """
    _warn_small_groups(base, dimensions)
    rows = []
    few: list[str] = []
    flat: list[str] = []
    tested: list[int] = []
    cells: list[list[np.ndarray]] = []
    for model, sid, dim, samples in _scenario_samples(base, dimensions):
        k = len(samples)
        test = "mannwhitneyu" if k == 2 else "kruskal"
        if k < 2:
            few.append(f"{model}/{dim}/scenario {sid} ({k} group)")
        elif np.ptp(np.concatenate(samples)) == 0:
            flat.append(f"{model}/{dim}/scenario {sid}")
        else:
            tested.append(len(rows))
            cells.append(samples)
        n = int(sum(s.size for s in samples))
        rows.append((model, dim, int(sid), test, np.nan, k, n, np.nan))
    if cells:  # MWU for two groups, Kruskal-Wallis for more; cells of one shape in one call
        stat, p = group_tests(cells)
        for i, st, pv in zip(tested, stat, p):
            model, dim, sid, test, _, k, n, _ = rows[i]
            rows[i] = (model, dim, sid, test, float(st), k, n, float(pv))
    if few:
        log.warning(
            "demographic tests: %d cell(s) with fewer than 2 groups holding a valid phi, not "
            "tested: %s",
            len(few),
            _listing(few),
        )
    if flat:
        log.warning(
            "demographic tests: %d cell(s) whose phi are all identical, not tested: %s",
            len(flat),
            _listing(flat),
        )
    out = pd.DataFrame(
        rows,
        columns=["model", "dimension", "scenario_id", "test", "statistic", "n_groups", "n", "pval"],
    )
    out["pval_corr"] = np.nan
    for _, idx in out.groupby(["model", "dimension"], sort=False).groups.items():
        out.loc[idx, "pval_corr"] = p_adjust(out.loc[idx, "pval"].to_numpy(), method)
    out["significant"] = out["pval_corr"] < alpha
    return out


def _codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer code per row (-1 where missing) and the sorted values (a categorical's
    categories, in their order) -- the order ``groupby(sort=True)`` visits groups in."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy().astype(np.int64), np.asarray(col.cat.categories)
    cc, u = pd.factorize(col, sort=True)
    return cc.astype(np.int64), np.asarray(u)


def _scenario_samples(
    base: pd.DataFrame, dimensions: Mapping[str, str]
) -> Iterator[tuple[object, object, str, list[np.ndarray]]]:
    """``(model, scenario_id, dimension, samples)`` per model x scenario (sorted) x dimension:
    the valid phi of each group of the dimension with any (groups in sorted order, rows in
    table order) -- what ``groupby([model, scenario_id])`` then ``groupby(col)`` yields, from
    one stable sort per dimension instead of a pandas group per cell."""
    mc, models_u = _codes(base["model"])
    sc, sids_u = _codes(base["scenario_id"])
    ok = (mc >= 0) & (sc >= 0)
    flat_cell = np.where(ok, mc * max(len(sids_u), 1) + sc, -1)
    uniq, inv = np.unique(flat_cell[ok], return_inverse=True)  # observed cells, sorted
    cell = np.full(len(base), -1, dtype=np.int64)
    cell[ok] = inv
    phi = base["phi"].to_numpy(dtype=np.float64, na_value=np.nan)
    valid = (cell >= 0) & ~np.isnan(phi)
    n_cells = len(uniq)
    per_dim = []
    for col in dimensions.values():
        gc, _ = _codes(base[col])
        use = valid & (gc >= 0)
        idx = np.flatnonzero(use)
        n_groups = int(gc.max()) + 1 if len(gc) else 0
        order = idx[np.lexsort((gc[idx], cell[idx]))]  # by cell, then group; stable in rows
        flat = cell[order] * max(n_groups, 1) + gc[order]
        bounds = np.flatnonzero(np.diff(flat)) + 1
        starts = np.r_[0, bounds] if len(order) else np.array([], dtype=np.int64)
        ends = np.r_[bounds, len(order)] if len(order) else np.array([], dtype=np.int64)
        by_cell: list[list[np.ndarray]] = [[] for _ in range(n_cells)]
        for a, b in zip(starts, ends):
            by_cell[int(cell[order[a]])].append(phi[order[a:b]])
        per_dim.append(by_cell)
    models = models_u[uniq // max(len(sids_u), 1)]
    sids = sids_u[uniq % max(len(sids_u), 1)]
    for c in range(n_cells):
        for d, dim in enumerate(dimensions):
            yield models[c], sids[c], dim, per_dim[d][c]


def contrast_ttest(
    num: np.ndarray,
    den: np.ndarray,
    coef: np.ndarray,
    *,
    min_faces: int = 2,
) -> tuple[float, float, int]:
    """Face-level test of a linear contrast of cell SBS: ``sum_c coef_c * SBS_c = 0``.

    ``SBS_c = sum_f num[f, c] / sum_f den[f, c]`` (faces x cells sums, as in
    :class:`~stylisticbias.analysis.metrics.CellSums`). The faces are independent, so the
    estimate's variance is the cluster-robust (delta-method) one: with each face's influence
    ``u_f = sum_c coef_c (num[f, c] - SBS_c den[f, c]) / D_c`` (``D_c`` the cell's rows),
    ``var = F / (F - 1) sum_f u_f^2`` over the ``F`` faces with rows in any of the cells, and
    ``t = estimate / sqrt(var)`` on ``F - 1`` df (two-sided). This is a one-sample t-test of the
    face-level pseudo-values ``estimate + F u_f`` -- the test of exactly the printed number, and
    the large-sample counterpart of its face-bootstrap interval.

    Returns ``(estimate, p, F)``; ``p`` is NaN (not tested) with fewer than ``min_faces`` faces
    or a zero variance.
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    d = den.sum(axis=0)
    ok = d > 0
    if not ok.any():
        return np.nan, np.nan, 0
    num, den, coef, d = num[:, ok], den[:, ok], coef[ok], d[ok]
    r = num.sum(axis=0) / d
    est = float(coef @ r)
    used = (den > 0).any(axis=1)
    f = int(used.sum())
    u = ((num - r * den) / d) @ coef
    u = u[used]
    if f < max(min_faces, 2):
        return est, np.nan, f
    var = f / (f - 1) * float(np.sum(u * u))
    if not var > 1e-30:
        return est, np.nan, f
    t = est / np.sqrt(var)
    return est, float(2.0 * stats.t.sf(abs(t), df=f - 1)), f
