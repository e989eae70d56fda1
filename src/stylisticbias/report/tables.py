"""Which long ``analyze`` table and which paper-layout table stand for each paper table.

The ``analyze`` stage writes every paper table twice: long (``vs_by_model.csv`` ..., the
reference CSVs' format) and in the paper's layout with its marks (``table02_vs.csv`` ...,
:func:`stylisticbias.analysis.layout.wide_tables`). The report embeds the paper-layout files as
they are and uses the long ones, keyed by the specs below, for the paper comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from stylisticbias.report.plots_data import pooled

DIMENSION_ALIASES = {"body_type": "body", "Body": "body", "Body type": "body"}


@dataclass(frozen=True)
class PaperTable:
    """One paper table: its long and paper-layout files and how long rows are keyed."""

    key: str  # "table2"
    title: str
    file: str  # reports/tables/<file>.csv and conf/reference/paper/<file>.csv (long)
    wide: str  # reports/tables/<wide>.csv (paper layout, written by analyze)
    rows: tuple[str, ...]  # row key columns
    column: str | None  # long column that the paper spreads over table columns
    values: tuple[str, ...]  # value column(s)
    per_model: bool = False  # rows are models (else pooled over models)
    join: tuple[str, ...] = ()  # row keys matched against the paper (default: ``rows``)


PAPER_TABLES: tuple[PaperTable, ...] = (
    PaperTable(
        "table2",
        "Table 2. VS per demographic attribute",
        "vs_by_model",
        "table02_vs",
        ("model",),
        "dimension",
        ("vs",),
        per_model=True,
    ),
    PaperTable(
        "table3",
        "Table 3. SBS per attribute category across demographics",
        "sbs_category_by_demographic",
        "table03_sbs_category",
        ("category",),
        "dimension",
        ("sbs",),
    ),
    PaperTable(
        "table4",
        "Table 4. SBS per fashion style across age groups (Y-E = Elderly - Young)",
        "sbs_fashion_by_age",
        "table04_fashion_age",
        ("variation",),
        "group",
        ("sbs",),
    ),
    PaperTable(
        "table5",
        "Table 5. Facial tattoo SBS across demographic groups",
        "tattoo_sbs",
        "table05_tattoo",
        ("dimension", "group"),
        None,
        ("sbs",),
    ),
    PaperTable(
        "table6",
        "Table 6. SBS per fashion style across body types",
        "sbs_fashion_by_body",
        "table06_fashion_body",
        ("variation",),
        "group",
        ("sbs",),
    ),
    PaperTable(
        "table7",
        "Table 7. Per-model variation effects and robustness (face level)",
        "per_model_effects",
        "table07_model_effects",
        ("model",),
        None,
        ("sbs", "cohens_d", "zero_rate", "large_shift_rate"),
        per_model=True,
    ),
    PaperTable(
        "table11",
        "Table 11. Share of scenarios with a significant demographic effect",
        "significance_rate_by_model",
        "table11_significance_rate",
        ("model",),
        "dimension",
        ("pct_scenarios_significant",),
        per_model=True,
    ),
    PaperTable(
        "table12",
        "Table 12. Mean Δ per variation × demographic group",
        "shift_by_variation_demographic",
        "table12_shift",
        ("category", "variation"),
        "group",
        ("delta",),
        join=("variation",),
    ),
)
WIDE_TABLES: tuple[str, ...] = tuple(t.wide for t in PAPER_TABLES)


def normalize(df: pd.DataFrame, spec: PaperTable) -> pd.DataFrame:
    """A long table in the paper's vocabulary (``body`` dimension) with per-model or pooled
    rows selected as the paper's table has them."""
    df = df.copy()
    if "dimension" in df.columns:
        df["dimension"] = df["dimension"].replace(DIMENSION_ALIASES)
    if not spec.per_model and "model" in df.columns:
        keys = [c for c in (*spec.rows, spec.column) if c and c in df.columns]
        df = pooled(df, keys, f"reports/tables/{spec.file}.csv")
    return df


def long_values(df: pd.DataFrame, spec: PaperTable) -> pd.DataFrame:
    """Numeric long view ``(row keys..., column, value[, ci_low, ci_high])``."""
    df = normalize(df, spec)
    rows = [r for r in spec.rows if r in df.columns]
    vals = [v for v in spec.values if v in df.columns]
    if spec.column is None:
        out = df.melt(id_vars=rows, value_vars=vals, var_name="column", value_name="value")
    else:
        out = df[[*rows, spec.column, vals[0]]].rename(
            columns={spec.column: "column", vals[0]: "value"}
        )
    if len(spec.values) == 1:
        for c in ("ci_low", "ci_high"):
            if c in df.columns:
                out[c] = df[c].to_numpy()
    out["value"] = pd.to_numeric(out["value"], errors="coerce")
    return out.reset_index(drop=True)
