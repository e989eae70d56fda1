"""SBS for any grouping and the face-level effect sizes of Table 7, vectorised over faces.

The core is :func:`cell_sums`: for a grouping ``by`` it bins the delta rows into a
(faces x cells) matrix of summed deltas and row counts with one ``np.bincount``. Everything else
-- the SBS itself (ratio of the column sums), its face-level bootstrap CI (``W @ num / W @ den``)
and the face-level Wilcoxon test (on ``num / den``, each face's mean delta in the cell) -- reads
those two matrices.

Example::

    sbs(scores, by=["category"])                   # Table 3 rows, pooled over models
    sbs(scores, by=["model", "scenario_id"])       # Fig. 3 per model
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci, ratio_boot
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import p_adjust, wilcoxon_faces

log = logging.getLogger(__name__)

_D = AnalysisSettings  # the settings' defaults (conf/analysis/default.yaml mirrors them)

#: cap on faces x cells of one grouping (keeps the dense matrices small)
MAX_MATRIX = 50_000_000

SBS_COLUMNS = [
    "effect",
    "abs_effect",
    "mean_abs_delta",
    "ci_low",
    "ci_high",
    "pval",
    "pval_corr",
    "n",
    "n_faces",
]


def _sorted_unique(flat: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(flat, return_inverse=True)`` for codes in ``range(size)``: by counting where
    ``size`` is small (no sort of every row), else by sorting."""
    if size > max(4 * len(flat), 1 << 16):
        uniq, inv = np.unique(flat, return_inverse=True)
        return uniq, inv.astype(np.int64, copy=False)
    seen = np.bincount(flat, minlength=size) > 0
    rank = np.cumsum(seen) - 1
    return np.flatnonzero(seen), rank[flat]


def group_codes(df: pd.DataFrame, by: Sequence[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Integer cell code per row (``-1`` where a ``by`` value is missing) and the cells' keys.

    Cells are the observed combinations, sorted by the columns' sorted values.
    """
    if not by:
        return np.zeros(len(df), dtype=np.int64), pd.DataFrame(index=[0])
    missing = [c for c in by if c not in df.columns]
    if missing:
        raise ValueError(f"grouping column(s) {missing} not in the table; have {list(df.columns)}")
    codes, uniques = [], []
    for c in by:
        col = df[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            cc = col.cat.codes.to_numpy().astype(np.int64)
            u = col.cat.categories
        else:
            cc, u = pd.factorize(col, sort=True)
            cc = cc.astype(np.int64)
        codes.append(cc)
        uniques.append(u)
    bad = np.zeros(len(df), dtype=bool)
    for cc in codes:
        bad |= cc < 0
    dims = tuple(max(len(u), 1) for u in uniques)
    flat = np.ravel_multi_index(tuple(np.where(bad, 0, cc) for cc in codes), dims)
    uniq, inv = _sorted_unique(flat[~bad], int(np.prod(dims, dtype=np.int64)))
    out = np.full(len(df), -1, dtype=np.int64)
    out[~bad] = inv
    parts = np.unravel_index(uniq, dims)
    keys = pd.DataFrame({c: np.asarray(u)[p] for c, u, p in zip(by, uniques, parts)})
    return out, keys


@dataclass
class CellSums:
    """Face x cell sums: ``num`` (sum delta), ``den`` (rows), ``absum`` (per cell, sum |delta|)."""

    keys: pd.DataFrame
    num: np.ndarray
    den: np.ndarray
    absum: np.ndarray  # per cell

    @property
    def effect(self) -> np.ndarray:
        """Mean delta per cell over all its rows (the SBS)."""
        d = self.den.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(d > 0, self.num.sum(axis=0) / np.where(d > 0, d, 1), np.nan)

    @property
    def face_means(self) -> np.ndarray:
        """Each face's mean delta per cell (NaN where the face has no rows in the cell)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.den > 0, self.num / np.where(self.den > 0, self.den, 1), np.nan)

    def labels(self) -> list[str]:
        """Readable cell names for warnings."""
        return [
            " / ".join(f"{k}={v}" for k, v in row.items()) for row in self.keys.to_dict("records")
        ]


def face_codes(face_id: pd.Series, faces: pd.Index | None = None) -> tuple[np.ndarray, pd.Index]:
    """Face index per row against ``faces`` (sorted unique ids of ``face_id`` if not given)."""
    if isinstance(face_id.dtype, pd.CategoricalDtype):
        cats = pd.Index(face_id.cat.categories.astype(str))
        cc = face_id.cat.codes.to_numpy()
        null = bool(len(cc)) and cc.min() < 0
        if faces is None:
            seen = np.bincount(cc[cc >= 0] if null else cc, minlength=len(cats))  # (no sort)
            faces = pd.Index(np.sort(cats[np.flatnonzero(seen)]))
        lut = faces.get_indexer(cats).astype(np.int64)
        # without nulls one pass (a -1 from the lookup, a face outside ``faces``, is caught below)
        codes = np.where(cc >= 0, lut[cc], -1) if null else lut[cc]
    else:
        ids = face_id.astype(str)
        if faces is None:
            faces = pd.Index(np.sort(pd.unique(ids)))
        codes = faces.get_indexer(ids)
    if (codes < 0).any():
        raise ValueError("face_id values not in the face index")
    return codes.astype(np.int64, copy=False), faces


def cell_sums(
    df: pd.DataFrame,
    by: Sequence[str],
    *,
    faces: pd.Index | None = None,
    value: str = "delta",
    fcodes: np.ndarray | None = None,
) -> tuple[CellSums, pd.Index]:
    """Bin the rows with a non-null ``value`` into (faces x cells) sums for grouping ``by``."""
    if value not in df.columns:
        raise ValueError(f"column {value!r} not in the table")
    if fcodes is None:
        fcodes, faces = face_codes(df["face_id"], faces)
    assert faces is not None
    cell, keys = group_codes(df, by)
    v = df[value].to_numpy(dtype=np.float64, na_value=np.nan)
    keep = (cell >= 0) & np.isfinite(v)
    if not keep.any():
        raise ValueError(f"no rows with a non-null {value!r} to group by {list(by)}")
    if not keep.all():
        # drop cells that only had null rows
        used = np.unique(cell[keep])
        remap = np.full(len(keys), -1, dtype=np.int64)
        remap[used] = np.arange(used.size)
        cell = np.where(keep, remap[np.maximum(cell, 0)], -1)
        keys = keys.iloc[used].reset_index(drop=True)
    nf, nc = len(faces), len(keys)
    if nf * nc > MAX_MATRIX:
        raise ValueError(f"grouping {list(by)} has {nc} cells x {nf} faces: too fine for SBS cells")
    flat = fcodes[keep] * nc + cell[keep]
    num = np.bincount(flat, weights=v[keep], minlength=nf * nc).reshape(nf, nc)
    den = np.bincount(flat, minlength=nf * nc).reshape(nf, nc).astype(np.float64)
    absum = np.bincount(cell[keep], weights=np.abs(v[keep]), minlength=nc)
    return CellSums(keys, num, den, absum), faces


def sbs(
    scores: pd.DataFrame,
    by: Sequence[str],
    *,
    n_resamples: int = 1000,
    ci: float = _D.ci,
    seed: int = 0,
    test: bool = True,
    method: str = "fdr_bh",
    min_faces: int = 2,
    zero_method: str = "wilcox",
    correction: bool = False,
    scipy_method: bool = False,
    faces: pd.Index | None = None,
    weights: np.ndarray | None = None,
    face_t_ci: bool = False,
) -> pd.DataFrame:
    """Signed Bias Shift (mean delta) per cell of ``by``, with face-level CI and test.

    Parameters
    ----------
    scores : DataFrame
        Score rows (``SCORES`` schema); base rows (null ``delta``) are ignored.
    by : list of str
        Grouping columns (``[]`` = one overall cell).
    n_resamples, ci, seed :
        Face-level bootstrap (faces resampled with replacement); ``n_resamples=0`` skips it.
    face_t_ci : bool
        ``ci_low/high`` from :func:`face_t_interval` (the face-level t-interval of the cell's
        SBS; the default definitions) instead of the face bootstrap's percentile interval
        (``official``), which is too narrow for cells of few faces (coverage 0.91 on Table 12's
        cells in ``protocols.stylisticbias.valid_inference.tables``).
    test : bool
        Face-level Wilcoxon signed-rank test of each cell against 0 (each face contributes its
        mean delta in the cell), corrected across the cells with ``method``.

    Returns
    -------
    DataFrame: the ``by`` columns, then ``effect`` (SBS), ``abs_effect`` (|SBS|),
    ``mean_abs_delta`` (mean |delta|), ``ci_low``, ``ci_high``, ``pval``, ``pval_corr``,
    ``n`` (rows), ``n_faces``.
    """
    cs, faces = cell_sums(scores, by, faces=faces)
    return sbs_frame(
        cs,
        n_resamples=n_resamples,
        ci=ci,
        seed=seed,
        test=test,
        method=method,
        min_faces=min_faces,
        zero_method=zero_method,
        correction=correction,
        scipy_method=scipy_method,
        weights=weights,
        face_t_ci=face_t_ci,
    )


def face_t_interval(num: np.ndarray, den: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Face-level t-interval of each cell's SBS ``sum_f num[f, c] / sum_f den[f, c]``.

    The faces are the independent units: each face's influence ``u_f = (num_f - SBS den_f) /
    D`` (``D`` the cell's rows) gives the cluster-robust (delta-method) variance ``F / (F - 1)
    sum_f u_f^2`` over the cell's ``F`` faces, and the interval is ``SBS +- t_{F-1} se`` -- the
    interval that inverts the one-sample t-test of the face pseudo-values (as Table 3's
    ``significance.contrast_ttest``). NaN for cells with fewer than two faces.
    """
    from scipy import stats

    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    d = den.sum(axis=0)
    f = (den > 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(d > 0, num.sum(axis=0) / np.where(d > 0, d, 1.0), np.nan)
        u = (num - r * den) / np.where(d > 0, d, 1.0)
        var = np.where(f >= 2, f / np.maximum(f - 1, 1) * (u * u).sum(axis=0), np.nan)
    half = stats.t.ppf(0.5 + ci / 2.0, np.maximum(f - 1, 1)) * np.sqrt(var)
    return r - half, r + half


def sbs_frame(
    cs: CellSums,
    *,
    n_resamples: int = 1000,
    ci: float = _D.ci,
    seed: int = 0,
    test: bool = True,
    method: str = "fdr_bh",
    min_faces: int = 2,
    zero_method: str = "wilcox",
    correction: bool = False,
    scipy_method: bool = False,
    weights: np.ndarray | None = None,
    boot_out: list[np.ndarray] | None = None,
    face_t_ci: bool = False,
) -> pd.DataFrame:
    """The :func:`sbs` frame from :class:`CellSums` (``boot_out`` receives the replicates)."""
    out = cs.keys.copy()
    eff = cs.effect
    n = cs.den.sum(axis=0)
    out["effect"] = eff
    out["abs_effect"] = np.abs(eff)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["mean_abs_delta"] = cs.absum / np.where(n > 0, n, np.nan)
    lo = hi = np.full(len(eff), np.nan)
    if n_resamples:
        w = weights if weights is not None else face_weights(cs.num.shape[0], n_resamples, seed)
        boot = ratio_boot(cs.num, cs.den, w)
        lo, hi = percentile_ci(boot, ci)
        if boot_out is not None:
            boot_out.append(boot)
        if face_t_ci:
            lo, hi = face_t_interval(cs.num, cs.den, ci)
    out["ci_low"], out["ci_high"] = lo, hi
    pval = np.full(len(eff), np.nan)
    n_faces = (cs.den > 0).sum(axis=0)
    if test:
        pval, _ = wilcoxon_faces(
            cs.face_means,
            labels=cs.labels(),
            min_faces=min_faces,
            zero_method=zero_method,
            correction=correction,
            scipy_method=scipy_method,
        )
    out["pval"] = pval
    out["pval_corr"] = p_adjust(pval, method)
    out["n"] = n.astype(np.int64)
    out["n_faces"] = n_faces.astype(np.int64)
    return out


def face_effects(
    scores: pd.DataFrame,
    by: Sequence[str] = ("model",),
    *,
    ddof: int = 1,
    zero_tol: float = 1e-9,
    large_shift: float = _D.large_shift,
    n_resamples: int = 1000,
    ci: float = _D.ci,
    seed: int = 0,
    min_faces: int = 2,
    zero_method: str = "wilcox",
    correction: bool = False,
    scipy_method: bool = False,
    faces: pd.Index | None = None,
    weights: np.ndarray | None = None,
) -> pd.DataFrame:
    """Table 7: face-level SBS and Cohen's d, share of zero and of large shifts, per ``by`` cell.

    Each face contributes its mean delta over all its variations x scenarios in the cell;
    ``sbs`` is the mean of those face means and ``cohens_d`` = mean / sd (``ddof``) -- a
    one-sample standardised effect against 0. ``zero_rate`` is the share of delta rows with
    ``|delta| <= zero_tol``; ``large_shift_rate`` the share with ``|delta| >= large_shift``.
    ``ci_low``/``ci_high`` bound ``sbs`` and ``d_ci_low``/``d_ci_high`` bound ``cohens_d`` (face
    bootstrap); ``pval`` is the face-level Wilcoxon test of ``sbs`` against 0.
    """
    cs, faces = cell_sums(scores, list(by), faces=faces)
    fm = cs.face_means
    has = np.isfinite(fm)
    k = has.sum(axis=0)
    x = np.where(has, fm, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.sum(axis=0) / k
        var = ((x - mean) ** 2 * has).sum(axis=0) / (k - ddof)
        sd = np.sqrt(var)
        d = np.where(sd > 0, mean / sd, np.nan)
    if np.any(k - ddof <= 0) or np.any(sd == 0):
        log.warning(
            "face_effects: Cohen's d undefined (one face or zero spread) in %d cell(s): NaN",
            int(np.sum((k - ddof <= 0) | (sd == 0))),
        )
    sub = scores[[*list(by), "delta"]].copy() if by else scores[["delta"]].copy()
    sub = sub[sub["delta"].notna()]
    cell, _ = group_codes(sub, list(by)) if by else (np.zeros(len(sub), dtype=np.int64), None)
    # group_codes on the filtered rows yields the same sorted keys as cs.keys (same cells)
    a = np.abs(sub["delta"].to_numpy(dtype=np.float64))
    nrows = np.bincount(cell, minlength=len(cs.keys))
    zero = np.bincount(cell, weights=(a <= zero_tol).astype(float), minlength=len(cs.keys)) / nrows
    large = (
        np.bincount(cell, weights=(a >= large_shift - 1e-12).astype(float), minlength=len(cs.keys))
        / nrows
    )
    out = cs.keys.copy()
    out["sbs"], out["cohens_d"], out["zero_rate"], out["large_shift_rate"] = mean, d, zero, large
    lo = hi = dlo = dhi = np.full(len(mean), np.nan)
    if n_resamples:
        w = weights if weights is not None else face_weights(len(faces), n_resamples, seed)
        wh = w @ has.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            bm = (w @ x) / wh
            bv = ((w @ (x**2)) - wh * bm**2) / (wh - ddof)
            bd = bm / np.sqrt(np.where(bv > 0, bv, np.nan))
        lo, hi = percentile_ci(bm, ci)
        dlo, dhi = percentile_ci(bd, ci)
    out["ci_low"], out["ci_high"], out["d_ci_low"], out["d_ci_high"] = lo, hi, dlo, dhi
    out["pval"], _ = wilcoxon_faces(
        fm, labels=cs.labels(), min_faces=min_faces, zero_method=zero_method, correction=correction
    )
    out["n"] = nrows.astype(np.int64)
    out["n_faces"] = k.astype(np.int64)
    return out
