"""The paper's tables (2-7, 11, 12) in the long format of ``shared/reference/stylisticbias/``.

Each builder returns the reference file's columns first (so a paper comparison is a join),
then ``ci_low, ci_high, pval, pval_corr, n`` and friends. docs/statistics.md documents them.
This module holds the shift tables built on the Table 12 cells (3, 4, 5, 6, 12);
:mod:`stylisticbias.analysis.model_tables` the per-model ones (2, 7, 11).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci
from stylisticbias.analysis.metrics import CellSums, cell_sums, sbs_frame
from stylisticbias.analysis.official import (
    AGE_GRADIENT_STYLES,
    BODY_COMPENSATION_STYLES,
    TABLE3_CELL_COLUMNS,
    TATTOO_DIMENSIONS,
    SectionCell,
    adjust_untested_as_one,
    released_matches,
    section_table_official,
    table3_official,
)
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import contrast_ttest, marks, p_adjust
from stylisticbias.analysis.table_registry import spec
from stylisticbias.benchmark import Benchmark, VariationValue

log = logging.getLogger(__name__)

#: reference ``dimension`` name -> scores column
DIMENSIONS: dict[str, str] = {
    "age": "age",
    "gender": "gender",
    "ethnicity": "ethnicity",
    "body": "body_type",
}
AVERAGE = "Average"
GAP = "elderly_minus_young"  # reference name of Table 4's Y-E column


def table12_grid(benchmark: Benchmark, *, evaluated_only: bool = True) -> pd.DataFrame:
    """Every variation x demographic group cell of Table 12 with its ``applicable`` flag.

    A cell is applicable when the variation exists for some face of the group (gender scope
    and plausibility pass). For the paper's whitelist: 34 x 13 = 442 cells, 437 applicable.
    """
    rows = []
    for v in benchmark.variations:
        if evaluated_only and not v.evaluated:
            continue
        for dim, col in DIMENSIONS.items():
            for g in benchmark.demographics[col]:
                ok = (
                    v.applies_to(g)
                    if col == "gender"
                    else any(v.applies_to(x) for x in benchmark.demographics["gender"])
                )
                rows.append((v.attribute, v.value, dim, g, ok))
    return pd.DataFrame(rows, columns=["attribute", "value", "dimension", "group", "applicable"])


@dataclass
class Shift:
    """Table 12 cells (variation x group) with their bootstrap replicates, shared by 3-6."""

    frame: pd.DataFrame  # one row per tested cell
    boot: np.ndarray | None  # (B, cells)
    num: np.ndarray | None = None  # (faces, cells) summed delta, columns as ``frame`` rows
    den: np.ndarray | None = None  # (faces, cells) row counts


def with_significance(df: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """Add the ``significance`` marks column from ``pval_corr`` (in place; returns ``df``)."""
    df["significance"] = marks(df["pval_corr"].to_numpy(), s.alpha, s.strong_alpha)
    return df


def shift_cells(delta: pd.DataFrame, faces: pd.Index, s: AnalysisSettings) -> Shift:
    """Variation x group SBS over all models and scenarios, Wilcoxon + BH across all cells."""
    return shift_from_sums(
        {
            dim: cell_sums(delta, ["attribute", "value", col], faces=faces)[0]
            for dim, col in DIMENSIONS.items()
        },
        faces,
        s,
    )


def shift_from_sums(sums: dict[str, CellSums], faces: pd.Index, s: AnalysisSettings) -> Shift:
    """:func:`shift_cells` from each dimension's ``[attribute, value, <column>]`` cell sums
    (pooled over models; the streaming analysis adds them up model by model)."""
    parts: list[CellSums] = []
    for dim, col in DIMENSIONS.items():
        cs = sums[dim]
        cs = CellSums(cs.keys.rename(columns={col: "group"}), cs.num, cs.den, cs.absum)
        cs.keys.insert(2, "dimension", dim)
        parts.append(cs)
    allc = CellSums(
        pd.concat([p.keys for p in parts], ignore_index=True),
        np.hstack([p.num for p in parts]),
        np.hstack([p.den for p in parts]),
        np.concatenate([p.absum for p in parts]),
    )
    boot: list[np.ndarray] = []
    w = face_weights(len(faces), s.n_resamples, s.seed) if s.n_resamples else None
    fr = sbs_frame(
        allc,
        **s.sbs_kwargs(),
        weights=w,
        boot_out=boot,
    )
    log.info("Table 12: %d variation x group cells, %d tested", len(fr), fr["pval"].notna().sum())
    return Shift(fr, boot[0] if boot else None, allc.num, allc.den)


def table12(shift: Shift, benchmark: Benchmark, s: AnalysisSettings) -> pd.DataFrame:
    """``shift_by_variation_demographic.csv``: Table 12 with the '-' cells as applicable=false."""
    present = shift.frame[["attribute", "value"]].drop_duplicates()
    grid = table12_grid(benchmark, evaluated_only=False).merge(present, on=["attribute", "value"])
    df = grid.merge(shift.frame, on=["attribute", "value", "dimension", "group"], how="left")
    if s.official:  # check_significance_independent.py: BH over every variation x group cell,
        # untested and empty ones (no faces of the group have the variation) as p = 1
        df["pval_corr"] = adjust_untested_as_one(
            df["pval"].to_numpy(), np.ones(len(df), dtype=bool), s.correction
        )
    df = with_significance(df, s)
    df.loc[~df["applicable"], "significance"] = ""
    lut = {(v.attribute, v.value): v for v in benchmark.variations}
    df.insert(0, "category", [lut[(a, v)].table12_category for a, v in zip(df.attribute, df.value)])
    df.insert(1, "variation", [lut[(a, v)].label for a, v in zip(df.attribute, df.value)])
    df.insert(4, "group_abbrev", df["group"].map(s.group_abbrev).fillna(df["group"]))
    df = df.rename(columns={"effect": "delta", "abs_effect": "abs_delta"})
    return df[spec("shift_by_variation_demographic").built_columns]


def _subset(shift: Shift, mask: np.ndarray) -> tuple[pd.DataFrame, np.ndarray | None]:
    fr = shift.frame[mask].copy()
    b = shift.boot[:, np.flatnonzero(mask)] if shift.boot is not None else None
    return fr, b


def table3(
    delta: pd.DataFrame | CellSums,
    faces: pd.Index,
    shift: Shift,
    benchmark: Benchmark,
    s: AnalysisSettings,
) -> pd.DataFrame:
    """``sbs_category_by_demographic.csv``: category x dimension.

    Everything comes from ``shift`` (the Table 12 cells, their bootstrap replicates and their
    face x cell sums ``num``/``den``), so the streaming analysis, which builds ``shift`` from the
    models' summed cell sums, gives the same table; ``delta`` and ``faces`` are not read.

    Value = unweighted mean, over the category's variations and the dimension's groups, of the
    Table 12 cells (reproduces the paper's Table 3 from its Table 12 within 0.001). CI: the
    same mean per bootstrap replicate. Test: the printed number itself, per cell -- a face-level
    t-test of that linear contrast of Table 12 cells
    (:func:`~stylisticbias.analysis.significance.contrast_ttest`), corrected across all
    category x dimension cells. (The paper's reading -- one face-level Wilcoxon per category,
    the same p in all four columns -- tests a different quantity and can contradict the cell's
    own CI.)
    """
    cat_of = {(v.attribute, v.value): v.category for v in benchmark.variations}
    fr = shift.frame
    if s.official and shift.num is not None and shift.den is not None:
        off = table3_official(
            fr, shift.num, shift.den, benchmark.categories, cat_of, s, average_label=AVERAGE
        )
        return off[spec("sbs_category_by_demographic").built_columns]
    cats = np.array([cat_of[(a, v)] for a, v in zip(fr.attribute, fr.value)])
    if shift.num is None or shift.den is None:
        raise ValueError("table3: the Table 12 cells carry no face-level sums (Shift.num/den)")
    rows = []
    order = [c for c in benchmark.categories if c in set(cats)]
    boots = {}
    for cat in order:
        for dim in DIMENSIONS:
            m = (
                (cats == cat)
                & (fr["dimension"].to_numpy() == dim)
                & fr["effect"].notna().to_numpy()
            )
            eff = float(fr.loc[m, "effect"].mean())
            lo = hi = np.nan
            if shift.boot is not None:
                with warnings.catch_warnings():  # a resample may miss every face of a cell
                    warnings.simplefilter("ignore", RuntimeWarning)
                    b = np.nanmean(shift.boot[:, np.flatnonzero(m)], axis=1)
                boots[(cat, dim)] = b
                l_, h_ = percentile_ci(b[:, None], s.ci)
                lo, hi = float(l_[0]), float(h_[0])
            idx = np.flatnonzero(m)
            _, p, nf = contrast_ttest(
                shift.num[:, idx],
                shift.den[:, idx],
                np.full(idx.size, 1.0 / max(idx.size, 1)),
                min_faces=s.min_faces,
            )
            n = int(fr.loc[m, "n"].sum())
            rows.append((cat, dim, eff, lo, hi, p, n, nf, int(m.sum())))
    df = pd.DataFrame(
        rows,
        columns=list(TABLE3_CELL_COLUMNS),
    )
    untested = df["pval"].isna() & df["sbs"].notna()
    if untested.any():
        log.warning(
            "Table 3: %d cell(s) not tested (fewer than %d faces or zero variance): %s",
            int(untested.sum()),
            s.min_faces,
            ", ".join(f"{c}/{d}" for c, d in zip(df.category[untested], df.dimension[untested])),
        )
    df["pval_corr"] = p_adjust(df["pval"].to_numpy(), s.correction)
    df = with_significance(df, s)
    avg = df.groupby("dimension", sort=False)["sbs"].mean().reset_index()
    avg.insert(0, "category", AVERAGE)
    for dim in avg["dimension"]:
        if boots:
            b = np.nanmean(np.column_stack([boots[(c, dim)] for c in order]), axis=1)
            l_, h_ = percentile_ci(b[:, None], s.ci)
            avg.loc[avg["dimension"] == dim, ["ci_low", "ci_high"]] = [l_[0], h_[0]]
    avg["significance"] = ""
    df = pd.concat([df, avg], ignore_index=True)
    return df[spec("sbs_category_by_demographic").built_columns]


def _face_sums(shift: Shift | None, table: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The Table 12 cells' keys and face sums the official Tables 4-6 are computed from."""
    if shift is None or shift.num is None or shift.den is None:
        raise ValueError(
            f"{table}: analysis.definitions official computes it from the Table 12 cells' face "
            "sums; pass shift= (a Shift with num/den)"
        )
    return shift.frame, shift.num, shift.den


def _with_rows(variations: list[VariationValue], frame: pd.DataFrame) -> list[VariationValue]:
    """The variations that have rows among the Table 12 cells (the script's data rows)."""
    present = set(zip(frame["attribute"], frame["value"]))
    return [v for v in variations if (v.attribute, v.value) in present]


def _label(hit: list[VariationValue]) -> str:
    """A cell's row label: its variations' paper labels (one for the paper's protocol)."""
    return " + ".join(v.label for v in hit)


def table4_official(shift: Shift | None, benchmark: Benchmark, s: AnalysisSettings) -> pd.DataFrame:
    """Table 4 as ``compute_age_gradient`` of ``compute_section_tables.py`` computes it: its
    styles (:data:`~stylisticbias.analysis.official.AGE_GRADIENT_STYLES`) x every age group,
    BH over those cells (:func:`~stylisticbias.analysis.official.section_table_official`); the
    elderly - young gap of the two cells' values, untested, as there."""
    frame, num, den = _face_sums(shift, "sbs_fashion_by_age")
    fashion = _with_rows(
        [v for v in benchmark.variations if v.category == s.fashion_category], frame
    )
    ages = list(benchmark.demographics["age"])
    matches = released_matches(fashion, AGE_GRADIENT_STYLES, benchmark.released, exact_first=True)
    cells = [
        SectionCell(_label(hit), tuple((v.attribute, v.value) for v in hit), "age", g)
        for _, hit in matches
        for g in ages
    ]
    df, boots = section_table_official(frame, num, den, cells, s)
    out = []
    for k in range(len(matches)):
        block = df.iloc[k * len(ages) : (k + 1) * len(ages)]
        out.append(block)
        y, e = k * len(ages), (k + 1) * len(ages) - 1
        gap = float(df["sbs"].iloc[e] - df["sbs"].iloc[y])  # NaN if either is empty
        lo = hi = np.nan
        if y in boots and e in boots:
            l_, h_ = percentile_ci((boots[e] - boots[y])[:, None], s.ci)
            lo, hi = float(l_[0]), float(h_[0])
        gap_row = {"variation": block["variation"].iloc[0], "group": GAP, "sbs": gap}
        gap_row.update(significance="", ci_low=lo, ci_high=hi, pval=np.nan)
        gap_row.update(pval_corr=np.nan, n=np.nan)
        out.append(pd.DataFrame([gap_row]))
    cols = ["variation", "group", "sbs", "significance", "ci_low", "ci_high", "pval"]
    if not out:
        return pd.DataFrame(columns=[*cols, "pval_corr", "n"])
    return pd.concat(out, ignore_index=True)[[*cols, "pval_corr", "n"]]


def table5_official(shift: Shift | None, benchmark: Benchmark, s: AnalysisSettings) -> pd.DataFrame:
    """Table 5 as ``compute_tattoo_flip`` of ``compute_section_tables.py`` computes it: every
    tattoo value's rows pooled per face, x every group of
    :data:`~stylisticbias.analysis.official.TATTOO_DIMENSIONS`, BH over those cells."""
    frame, num, den = _face_sums(shift, "tattoo_sbs")
    tattoo = _with_rows([v for v in benchmark.variations if v.category == s.tattoo_category], frame)
    cols = ["variation", "dimension", "group", "sbs", "significance", "ci_low", "ci_high"]
    cols += ["pval", "pval_corr", "n"]
    if not tattoo:
        return pd.DataFrame(columns=cols)
    values = tuple((v.attribute, v.value) for v in tattoo)
    cells = [
        SectionCell(_label(tattoo), values, dim, g)
        for dim in TATTOO_DIMENSIONS
        for g in benchmark.demographics[DIMENSIONS[dim]]
    ]
    return section_table_official(frame, num, den, cells, s)[0][cols]


def table6_official(shift: Shift | None, benchmark: Benchmark, s: AnalysisSettings) -> pd.DataFrame:
    """Table 6 as ``compute_body_compensation`` of ``compute_section_tables.py`` computes it:
    its styles (:data:`~stylisticbias.analysis.official.BODY_COMPENSATION_STYLES`) x every
    body type, BH over those cells."""
    frame, num, den = _face_sums(shift, "sbs_fashion_by_body")
    fashion = _with_rows(
        [v for v in benchmark.variations if v.category == s.fashion_category], frame
    )
    matches = released_matches(
        fashion, BODY_COMPENSATION_STYLES, benchmark.released, exact_first=False
    )
    cells = [
        SectionCell(_label(hit), tuple((v.attribute, v.value) for v in hit), "body", g)
        for _, hit in matches
        for g in benchmark.demographics[DIMENSIONS["body"]]
    ]
    cols = ["variation", "group", "sbs", "significance", "ci_low", "ci_high", "pval"]
    return section_table_official(frame, num, den, cells, s)[0][[*cols, "pval_corr", "n"]]


def table4(
    shift: Shift, t12: pd.DataFrame, benchmark: Benchmark, s: AnalysisSettings
) -> pd.DataFrame:
    """``sbs_fashion_by_age.csv``: fashion value x age group, plus the elderly - young gap.

    ``paper``: the Table 12 cells and their marks; ``official``: :func:`table4_official`."""
    if s.official:
        return table4_official(shift, benchmark, s)
    fashion = [v for v in benchmark.variations if v.category == s.fashion_category]
    ages = list(benchmark.demographics["age"])
    rows = []
    fr = shift.frame
    for v in fashion:
        sub = t12[
            (t12.attribute == v.attribute) & (t12.value == v.value) & (t12.dimension == "age")
        ]
        if sub.empty:
            continue
        for _, r in sub.iterrows():
            rows.append(
                {
                    "variation": v.label,
                    "group": r.group,
                    "sbs": r.delta,
                    "significance": r.significance,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "pval": r.pval,
                    "pval_corr": r.pval_corr,
                    "n": r.n_faces,
                }
            )
        ix = {
            g: np.flatnonzero(
                (fr.attribute == v.attribute)
                & (fr.value == v.value)
                & (fr.dimension == "age")
                & (fr.group == g)
            )
            for g in (ages[0], ages[-1])
        }
        if all(len(i) for i in ix.values()):
            gap = float(fr.effect.iloc[ix[ages[-1]][0]] - fr.effect.iloc[ix[ages[0]][0]])
            lo = hi = np.nan
            if shift.boot is not None:
                b = shift.boot[:, ix[ages[-1]][0]] - shift.boot[:, ix[ages[0]][0]]
                l_, h_ = percentile_ci(b[:, None], s.ci)
                lo, hi = float(l_[0]), float(h_[0])
            rows.append(
                {
                    "variation": v.label,
                    "group": GAP,
                    "sbs": gap,
                    "significance": "",
                    "ci_low": lo,
                    "ci_high": hi,
                    "pval": np.nan,
                    "pval_corr": np.nan,
                    "n": np.nan,
                }
            )
    return pd.DataFrame(rows)


def table5(
    t12: pd.DataFrame, benchmark: Benchmark, s: AnalysisSettings, shift: Shift | None = None
) -> pd.DataFrame:
    """``tattoo_sbs.csv``: tattoo value(s) x every demographic group.

    ``paper``: the Table 12 cells and their marks; ``official``: :func:`table5_official` (needs
    ``shift``)."""
    if s.official:
        return table5_official(shift, benchmark, s)
    vals = [v for v in benchmark.variations if v.category == s.tattoo_category]
    keep = t12[
        t12.applicable
        & t12.set_index(["attribute", "value"]).index.isin([(v.attribute, v.value) for v in vals])
    ]
    out = keep.rename(columns={"delta": "sbs"})[
        [
            "variation",
            "dimension",
            "group",
            "sbs",
            "significance",
            "ci_low",
            "ci_high",
            "pval",
            "pval_corr",
            "n_faces",
        ]
    ].rename(columns={"n_faces": "n"})
    return out.reset_index(drop=True)


def table6(
    t12: pd.DataFrame, benchmark: Benchmark, s: AnalysisSettings, shift: Shift | None = None
) -> pd.DataFrame:
    """``sbs_fashion_by_body.csv``: fashion value x body type.

    ``paper``: the Table 12 cells and their marks; ``official``: :func:`table6_official` (needs
    ``shift``)."""
    if s.official:
        return table6_official(shift, benchmark, s)
    vals = [
        (v.attribute, v.value) for v in benchmark.variations if v.category == s.fashion_category
    ]
    keep = t12[(t12.dimension == "body") & t12.set_index(["attribute", "value"]).index.isin(vals)]
    return (
        keep.rename(columns={"delta": "sbs", "n_faces": "n_f"})[
            [
                "variation",
                "group",
                "sbs",
                "significance",
                "ci_low",
                "ci_high",
                "pval",
                "pval_corr",
                "n_f",
            ]
        ]
        .rename(columns={"n_f": "n"})
        .reset_index(drop=True)
    )
