"""The paper's tables (2-7, 11, 12) in the paper's layout, from the long ``analyze`` tables.

One :class:`PaperTable` spec per table says which long table it comes from, which columns form
rows and columns, and how cells are printed. The same specs drive the markdown report
(:func:`layout`) and the paper comparison (:func:`long_values`), so our numbers and the paper's
are always keyed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.report.plots_data import pooled

DIMENSION_ALIASES = {"body_type": "body", "Body": "body", "Body type": "body", "ethn": "ethnicity"}
GROUP_ABBREV = {
    "young adult": "YA",
    "middle-aged adult": "MA",
    "elderly": "EL",
    "male": "M",
    "female": "F",
    "Asian": "As",
    "African": "Af",
    "European": "Eu",
    "Middle Eastern": "ME",
    "Latino": "La",
    "thin": "Th",
    "normal": "No",
    "obese": "Ob",
}


@dataclass(frozen=True)
class PaperTable:
    """Where one paper table comes from and how it is laid out."""

    key: str  # "table2"
    title: str
    file: str  # reports/tables/<file>.csv and conf/reference/paper/<file>.csv
    rows: tuple[str, ...]  # row key columns
    column: str | None  # long column pivoted into table columns (None: value columns as is)
    values: tuple[str, ...]  # value column(s) (one when pivoting)
    order: tuple[tuple[str, str], ...] = ()  # (value of ``column`` or value name, header)
    per_model: bool = False  # rows are models (else pooled over models)
    signed: bool = True
    digits: int = 3
    percent: bool = False
    plain: tuple[str, ...] = ()  # value columns printed unsigned, without significance marks
    join: tuple[str, ...] = ()  # row keys matched against the paper (default: ``rows``)


PAPER_TABLES: tuple[PaperTable, ...] = (
    PaperTable(
        "table2",
        "Table 2. VS per demographic attribute",
        "vs_by_model",
        ("model",),
        "dimension",
        ("vs",),
        (("age", "Age"), ("body", "Body"), ("ethnicity", "Ethn."), ("gender", "Gender")),
        per_model=True,
        signed=False,
    ),
    PaperTable(
        "table3",
        "Table 3. SBS per attribute category across demographics",
        "sbs_category_by_demographic",
        ("category",),
        "dimension",
        ("sbs",),
        (("age", "Age"), ("gender", "Gender"), ("ethnicity", "Ethn."), ("body", "Body")),
    ),
    PaperTable(
        "table4",
        "Table 4. SBS per fashion style across age groups (Y-E = Elderly - Young)",
        "sbs_fashion_by_age",
        ("variation",),
        "group",
        ("sbs",),
        (
            ("young adult", "Young"),
            ("middle-aged adult", "Middle-aged"),
            ("elderly", "Elderly"),
            ("elderly_minus_young", "Y-E"),
        ),
    ),
    PaperTable(
        "table5",
        "Table 5. Facial tattoo SBS across demographic groups",
        "tattoo_sbs",
        ("dimension", "group"),
        None,
        ("sbs",),
        (("sbs", "SBS"),),
    ),
    PaperTable(
        "table6",
        "Table 6. SBS per fashion style across body types",
        "sbs_fashion_by_body",
        ("variation",),
        "group",
        ("sbs",),
        (("thin", "Thin"), ("normal", "Normal"), ("obese", "Obese")),
    ),
    PaperTable(
        "table7",
        "Table 7. Per-model variation effects and robustness (face level)",
        "per_model_effects",
        ("model",),
        None,
        ("sbs", "cohens_d", "zero_rate", "large_shift_rate"),
        (
            ("sbs", "SBS"),
            ("cohens_d", "Cohen's d"),
            ("zero_rate", "Zero"),
            ("large_shift_rate", "|Δ| ≥ 0.25"),
        ),
        per_model=True,
        digits=4,
        plain=("zero_rate", "large_shift_rate"),
    ),
    PaperTable(
        "table11",
        "Table 11. % of scenarios with a significant demographic effect",
        "significance_rate_by_model",
        ("model",),
        "dimension",
        ("pct_scenarios_significant",),
        (("age", "Age"), ("body", "Body"), ("ethnicity", "Ethn."), ("gender", "Gender")),
        per_model=True,
        signed=False,
        digits=0,
        percent=True,
    ),
    PaperTable(
        "table12",
        "Table 12. Mean Δ per variation × demographic group",
        "shift_by_variation_demographic",
        ("category", "variation"),
        "group",
        ("delta",),
        tuple((g, a) for g, a in GROUP_ABBREV.items()),
        join=("variation",),
    ),
)
TABLE_BY_KEY = {t.key: t for t in PAPER_TABLES}
ALT_VALUE = {
    "sbs": ("sbs", "delta", "effect"),
    "delta": ("delta", "sbs", "effect"),
    "vs": ("vs", "effect"),
    "zero_rate": ("zero_rate", "zero_share"),
    "large_shift_rate": ("large_shift_rate", "large_shift_share"),
    "pct_scenarios_significant": ("pct_scenarios_significant", "pct_significant"),
}


def normalize(df: pd.DataFrame, spec: PaperTable) -> pd.DataFrame:
    """Our long table with the paper's vocabulary: value columns renamed, dimensions mapped,
    and per-model or pooled rows selected as the paper's table has them."""
    df = df.copy()
    for v in spec.values:
        if v not in df.columns:
            alt = next((a for a in ALT_VALUE.get(v, ()) if a in df.columns), None)
            if alt:
                df[v] = df[alt]
    if "dimension" in df.columns:
        df["dimension"] = df["dimension"].replace(DIMENSION_ALIASES)
    if not spec.per_model and "model" in df.columns:
        keys = [c for c in (*spec.rows, spec.column) if c and c in df.columns]
        df = pooled(df, keys, f"reports/tables/{spec.file}.csv")
    if (
        spec.percent
        and spec.values[0] in df
        and df[spec.values[0]].dropna().le(1.0).all()
        and df[spec.values[0]].dropna().gt(0).any()
        and "n_scenarios_significant_derived" not in df
    ):
        df[spec.values[0]] = df[spec.values[0]] * 100  # shares -> percent
    return df


def _pcol(df: pd.DataFrame) -> str | None:
    return next((c for c in ("pval_corr", "pval") if c in df.columns), None)


def significance(row: pd.Series, pcol: str | None, alpha: float) -> str:
    """``ns`` / ``p<0.05`` / ``p<0.001`` / '' for one long-table row."""
    if pcol and pd.notna(row.get(pcol)):
        p = float(row[pcol])
        return "p<0.001" if p < 0.001 else ("p<0.05" if p < alpha else "ns")
    sig = row.get("significance")
    return "" if sig is None or (isinstance(sig, float) and np.isnan(sig)) else str(sig)


def fmt(value: Any, spec: PaperTable, sig: str = "", plain: bool = False) -> str:
    """Print one cell like the paper: signed, fixed digits; **bold** p<0.001, <u>ns</u>."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    v = float(value)
    if plain:
        return f"{v:.{spec.digits - 1}f}"
    s = f"{v:+.{spec.digits}f}" if spec.signed else f"{v:.{spec.digits}f}"
    if spec.percent:
        s += "%"
    if sig == "p<0.001":
        return f"**{s}**"
    if sig == "ns":
        return f"<u>{s}</u>"
    return s


def layout(df: pd.DataFrame, spec: PaperTable, alpha: float = 0.05) -> pd.DataFrame:
    """The paper-layout table of strings (index = row labels, columns = paper headers)."""
    df = normalize(df, spec)
    pcol = _pcol(df)
    rows = [r for r in spec.rows if r in df.columns]
    if spec.column is None:
        out = df[rows].astype(str).copy()
        for v, head in spec.order:
            if v in df.columns:
                plain = v in spec.plain
                out[head] = [
                    fmt(x, spec, "" if plain else significance(r, pcol, alpha), plain)
                    for x, (_, r) in zip(df[v], df.iterrows())
                ]
        return out.reset_index(drop=True)
    df = df.assign(
        _cell=[fmt(r[spec.values[0]], spec, significance(r, pcol, alpha)) for _, r in df.iterrows()]
    )
    col = spec.column
    if col == "group" and "group" not in df.columns and "group_abbrev" in df.columns:
        col = "group_abbrev"
    wide = df.pivot_table(index=rows, columns=col, values="_cell", aggfunc="first", sort=False)
    heads = [(k, h) for k, h in spec.order if k in wide.columns or h in wide.columns]
    wide = wide[[k if k in wide.columns else h for k, h in heads]]
    wide.columns = [h for _, h in heads]
    return wide.fillna("–").reset_index()


def long_values(df: pd.DataFrame, spec: PaperTable) -> pd.DataFrame:
    """Numeric long view ``(key..., column, value)`` for the paper comparison."""
    df = normalize(df, spec)
    rows = [r for r in spec.rows if r in df.columns]
    if spec.column is None:
        out = df.melt(
            id_vars=rows,
            value_vars=[v for v in spec.values if v in df.columns],
            var_name="column",
            value_name="value",
        )
    else:
        out = df[[*rows, spec.column, spec.values[0]]].rename(
            columns={spec.column: "column", spec.values[0]: "value"}
        )
    extra = [c for c in ("ci_low", "ci_high") if c in df.columns and len(spec.values) == 1]
    for c in extra:
        out[c] = df[c].to_numpy()
    out["value"] = pd.to_numeric(out["value"], errors="coerce")
    return out.reset_index(drop=True)
