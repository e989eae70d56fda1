"""The paper's released code's definitions (``analysis.definitions: official``).

Where the paper's text leaves a choice open, its released code (``timo-cavelius/StylisticBias``,
``src/evaluation/``) makes one; under ``official`` the analysis makes the same choice so that the
same raw answers give that code's numbers (docs/statistics.md, "Definitions"):

* phi counts unparsed answers in its denominator (``scores``, ``compute_scores(definitions=)``);
* VS uses the sample standard deviation (``ddof`` 1) and Wilcoxon cells need three faces
  (``check_significance_independent.py``, which makes the significance of Tables 12 and 3;
  :meth:`~stylisticbias.analysis.settings.AnalysisSettings.resolved`);
* Benjamini-Hochberg runs over *every* cell of the table -- Table 12: every variation with rows x
  every demographic group (34 x 13 = 442), Table 3: every category x dimension (40) -- an
  untested or empty cell entering as p = 1 (:func:`adjust_untested_as_one`);
* Table 3 (:func:`table3_official`): per demographic group the mean over faces of each face's
  mean shift over the category's rows, averaged over the groups; its test is one Wilcoxon per
  category and dimension on the pooled per-face means, BH across all 40 cells;
* Tables 4-6 (:func:`section_table_official`) as ``compute_section_tables.py`` computes them
  (``compute_age_gradient``, ``compute_tattoo_flip``, ``compute_body_compensation``): its own
  cells (:data:`AGE_GRADIENT_STYLES` x age, every tattoo value pooled x
  :data:`TATTOO_DIMENSIONS`' groups, :data:`BODY_COMPENSATION_STYLES` x body type), each the mean
  over faces of the face's mean shift, tested by its helper ``wilcoxon_p`` from
  :data:`SECTION_MIN_FACES` faces, BH per table over every cell it lists (an empty one as p = 1).

The unit is the face (a face's rows of every model pooled), as in
``check_significance_independent.py``; its older ``compute_section_tables.py`` counts each
model's copy of a face apart (the same for one model; Tables 4-6 keep the face, since the
streamed Table 12 sums pool the models).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import TIE_DECIMALS, marks, p_adjust
from stylisticbias.benchmark import VariationValue
from stylisticbias.benchmark.released import ReleasedSpec

log = logging.getLogger(__name__)

#: ``compute_section_tables.py``'s ``wilcoxon_p`` (Tables 4-6): no test below 5 finite face
#: values or when all are zero (p = 1); ``check_significance_independent.py`` (Tables 12, 3)
#: tests from 3 (``settings.OFFICIAL_MIN_FACES``).
SECTION_MIN_FACES = 5
#: ``compute_age_gradient``'s ``styles_of_interest`` (Table 4), in its order: matched to a
#: fashion value by equal released spelling (case-insensitive), else by substring of
#: ``<key>:<released value>``.
AGE_GRADIENT_STYLES = (
    "Professional / Business formal",
    "Formal / Evening wear",
    "Smart casual",
    "Vintage / Retro",
    "Casual",
    "Streetwear",
    "Functional / outdoor wear",
    "Sporty / Athletic wear",
    "Worn / Distressed clothing",
)
#: ``compute_body_compensation``'s ``styles_of_interest`` (Table 6), matched by substring of
#: ``<key>:<released value>`` (case-insensitive) only.
BODY_COMPENSATION_STYLES = (
    "Professional / Business formal",
    "Formal / Evening wear",
    "Smart casual",
    "Vintage / Retro",
    "Worn / Distressed clothing",
)
#: ``compute_tattoo_flip``'s ``groups_of_interest``: every group of age, gender and body type
#: (no ethnicity), all tattoo values pooled.
TATTOO_DIMENSIONS = ("age", "gender", "body")

#: the columns of Table 3's cells as both definitions compute them (``pval_corr`` follows)
TABLE3_CELL_COLUMNS = (
    "category",
    "dimension",
    "sbs",
    "ci_low",
    "ci_high",
    "pval",
    "n",
    "n_faces",
    "n_cells",
)


def adjust_untested_as_one(
    pval: np.ndarray, in_family: np.ndarray, method: str, *, extra: int = 0
) -> np.ndarray:
    """Corrected p-values over the cells ``in_family``, an untested one (NaN p) entering as
    p = 1; cells out of the family stay NaN. ``extra``: cells of the family that are not rows
    here (the released code lists them with no data: p = 1)."""
    p = np.asarray(pval, dtype=np.float64).copy()
    has = np.asarray(in_family, dtype=bool)
    p[has & ~np.isfinite(p)] = 1.0
    p[~has] = np.nan
    if extra:
        out = p_adjust(np.concatenate([p, np.ones(extra)]), method)[: len(p)]
    else:
        out = p_adjust(p, method)
    return np.where(has, out, np.nan)


def official_wilcoxon_p(x: np.ndarray, min_faces: int) -> float:
    """The released code's face-level test: two-sided Wilcoxon signed-rank (SciPy defaults);
    p = 1 with fewer than ``min_faces`` finite values or when all are zero. The values are rounded
    to ``TIE_DECIMALS`` first, as in every test here (equal shifts tie; the released code ranks the
    float noise of its summation order)."""
    x = np.asarray(x, dtype=np.float64)
    x = np.round(x[np.isfinite(x)], TIE_DECIMALS)
    if x.size < min_faces or not np.any(x != 0):
        return 1.0
    return float(stats.wilcoxon(x, alternative="two-sided").pvalue)


def _face_means(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Per-face mean over the columns' rows (NaN where a face has none): (faces,)."""
    top, bottom = num.sum(axis=1), den.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


def _group_mean_of_face_means(
    x: np.ndarray, groups: list[np.ndarray], weights: np.ndarray | None
) -> tuple[float, np.ndarray | None]:
    """Mean over groups of the mean face value per group (and its bootstrap replicates)."""
    means, boots = [], []
    for g in groups:
        ok = g & np.isfinite(x)
        if not ok.any():
            continue
        means.append(float(x[ok].mean()))
        if weights is not None:
            w = weights[:, ok]
            tot = w.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                boots.append(np.where(tot > 0, (w @ x[ok]) / np.where(tot > 0, tot, 1), np.nan))
    value = float(np.mean(means)) if means else np.nan
    if weights is None or not boots:
        return value, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return value, np.nanmean(np.column_stack(boots), axis=1)


def table3_official(
    frame: pd.DataFrame,
    num: np.ndarray,
    den: np.ndarray,
    categories: list[str],
    category_of: dict[tuple[str, str], str],
    s: AnalysisSettings,
    *,
    average_label: str,
) -> pd.DataFrame:
    """Table 3 as the released code computes it, from the Table 12 cells' face sums.

    ``frame``: the Table 12 cell keys (``attribute, value, dimension, group``, one row per column
    of ``num``/``den``, the (faces x cells) sums of delta and row counts). Per category and
    dimension: ``sbs`` = mean over the dimension's groups of the mean over the group's faces of
    each face's mean delta over the category's rows; ``pval`` = Wilcoxon of every face's mean
    delta over the category's rows (faces of all groups pooled;
    :func:`official_wilcoxon_p`); ``pval_corr`` = BH over every category x dimension cell of
    ``categories`` (untested and empty ones as p = 1: 10 x 4 = 40 for the paper). CI: face
    bootstrap of the same ``sbs``.
    """
    cats = np.array([category_of[(a, v)] for a, v in zip(frame["attribute"], frame["value"])])
    dims = frame["dimension"].to_numpy()
    grp = frame["group"].to_numpy()
    n_faces = num.shape[0]
    w = face_weights(n_faces, s.n_resamples, s.seed) if s.n_resamples else None
    rows = []
    boots: dict[tuple[str, str], np.ndarray] = {}
    order = [c for c in categories if c in set(cats)]
    for cat in order:
        for dim in dict.fromkeys(dims):
            m = (cats == cat) & (dims == dim)
            if not m.any():
                continue
            pooled = _face_means(num[:, m], den[:, m])
            member = []
            for g in dict.fromkeys(grp[m]):
                cols = m & (grp == g)
                member.append(den[:, cols].sum(axis=1) > 0)
            value, b = _group_mean_of_face_means(pooled, member, w)
            lo = hi = np.nan
            if b is not None:
                boots[(cat, dim)] = b
                l_, h_ = percentile_ci(b[:, None], s.ci)
                lo, hi = float(l_[0]), float(h_[0])
            n_f = int(np.isfinite(pooled).sum())
            p = official_wilcoxon_p(pooled, s.min_faces) if n_f else np.nan
            rows.append((cat, str(dim), value, lo, hi, p, int(den[:, m].sum()), n_f, int(m.sum())))
    df = pd.DataFrame(
        rows,
        columns=list(TABLE3_CELL_COLUMNS),
    )
    n_dims = len(dict.fromkeys(dims))
    df["pval_corr"] = adjust_untested_as_one(
        df["pval"].to_numpy(),
        np.ones(len(df), dtype=bool),
        s.correction,
        extra=max(0, len(categories) * n_dims - len(df)),
    )
    df["significance"] = marks(df["pval_corr"].to_numpy(), s.alpha, s.strong_alpha)
    avg = df.groupby("dimension", sort=False)["sbs"].mean().reset_index()
    avg.insert(0, "category", average_label)
    for dim in avg["dimension"]:
        have = [boots[(c, dim)] for c in order if (c, dim) in boots]
        if have:
            b = np.nanmean(np.column_stack(have), axis=1)
            l_, h_ = percentile_ci(b[:, None], s.ci)
            avg.loc[avg["dimension"] == dim, ["ci_low", "ci_high"]] = [l_[0], h_[0]]
    avg["significance"] = ""
    log.info("Table 3 (official definitions): %d category x dimension cells", len(df))
    return pd.concat([df, avg], ignore_index=True)


@dataclass(frozen=True)
class SectionCell:
    """One cell of a ``compute_section_tables.py`` table: its row label, the ``(attribute,
    value)`` variations whose rows it pools, and the demographic group (``dimension`` and
    ``group`` as in the Table 12 cells)."""

    variation: str
    values: tuple[tuple[str, str], ...]
    dimension: str
    group: str


def released_matches(
    variations: Sequence[VariationValue],
    styles: Sequence[str],
    released: ReleasedSpec | None,
    *,
    exact_first: bool,
) -> list[tuple[str, list[VariationValue]]]:
    """Each of the script's ``styles`` with the variations whose rows it selects, in its order.

    The script names a row's variation ``<key>:<released value>``. ``exact_first``
    (``compute_age_gradient``): the value equal to the style (case-insensitive, stripped), else
    every name containing it; otherwise (``compute_body_compensation``) every name containing it
    (case-insensitive). A style that selects no variation is left out, as the script skips it.
    """

    def spelt(v: VariationValue) -> str:
        return released.value(v.key, v.value) if released is not None else v.value

    out = []
    for style in styles:
        st = style.lower()
        hit = [v for v in variations if spelt(v).strip().lower() == st] if exact_first else []
        if not hit:
            hit = [v for v in variations if st in f"{v.key}:{spelt(v)}".lower()]
        if hit:
            out.append((style, hit))
    return out


def section_table_official(
    frame: pd.DataFrame,
    num: np.ndarray,
    den: np.ndarray,
    cells: Sequence[SectionCell],
    s: AnalysisSettings,
) -> tuple[pd.DataFrame, dict[int, np.ndarray]]:
    """One of Tables 4-6 as ``compute_section_tables.py`` computes it, from the Table 12 cells'
    face sums (``frame``, ``num``, ``den`` as in :func:`table3_official`).

    Per cell (one row each, in ``cells``' order): ``sbs`` = mean over the group's faces of each
    face's mean delta over the rows of the cell's variations (faces without such rows left out;
    none: NaN); ``pval`` = its helper ``wilcoxon_p`` (:func:`official_wilcoxon_p` with
    :data:`SECTION_MIN_FACES`; NaN for an empty cell); ``pval_corr`` = the correction over every
    cell of the table, an empty or untested one as p = 1 (its ``bh_correct`` over
    ``cells_info``); ``significance`` from it ("" for an empty cell); ``n`` = faces with rows;
    CI: face bootstrap of ``sbs``. Also returns each non-empty cell's bootstrap replicates by
    row position (Table 4's gap).
    """
    keys = list(zip(frame["attribute"], frame["value"]))
    dims = frame["dimension"].to_numpy()
    grp = frame["group"].to_numpy()
    n_faces = num.shape[0]
    w = face_weights(n_faces, s.n_resamples, s.seed) if s.n_resamples else None
    everyone = [np.ones(n_faces, dtype=bool)]
    rows = []
    boots: dict[int, np.ndarray] = {}
    for i, c in enumerate(cells):
        pooled = set(c.values)
        m = (
            np.fromiter((k in pooled for k in keys), dtype=bool, count=len(keys))
            & (dims == c.dimension)
            & (grp == c.group)
        )
        x = _face_means(num[:, m], den[:, m])
        n_f = int(np.isfinite(x).sum())
        value, b = _group_mean_of_face_means(x, everyone, w)
        lo = hi = np.nan
        if b is not None:
            boots[i] = b
            l_, h_ = percentile_ci(b[:, None], s.ci)
            lo, hi = float(l_[0]), float(h_[0])
        p = official_wilcoxon_p(x, SECTION_MIN_FACES) if n_f else np.nan
        rows.append((c.variation, c.dimension, c.group, value, lo, hi, p, n_f))
    df = pd.DataFrame(
        rows,
        columns=["variation", "dimension", "group", "sbs", "ci_low", "ci_high", "pval", "n"],
    )
    df["pval_corr"] = adjust_untested_as_one(
        df["pval"].to_numpy(), np.ones(len(df), dtype=bool), s.correction
    )
    df["significance"] = np.where(
        df["n"].to_numpy() > 0, marks(df["pval_corr"].to_numpy(), s.alpha, s.strong_alpha), ""
    )
    log.info(
        "compute_section_tables.py cells (official definitions): %d, %d tested from %d faces",
        len(df),
        int((df["n"] >= SECTION_MIN_FACES).sum()),
        SECTION_MIN_FACES,
    )
    return df, boots
