"""Our numbers next to the paper's (Tables 2-7, 11, 12 and the figure-level claims).

The paper's tables are read from ``conf/reference/paper/`` (copies of the transcribed CSVs, so
the report never reads outside the repository). A comparison is made only when at least one of
the paper's six models was run (table model name = the paper's short name): per-model tables
(2, 7, 11) compare those models row by row; pooled tables (3-6, 12) compare our pooled estimate
with the paper's six-model average, with a note when the model sets differ.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.report.inputs import PAPER_MODELS, PAPER_REFERENCE
from stylisticbias.report.plots_data import (
    models_in,
    pair_stats,
    pareto_frame,
    scenario_by_model,
    scenario_frame,
)
from stylisticbias.report.tables import PAPER_TABLES, PaperTable, long_values

log = logging.getLogger(__name__)

REFERENCE_DIR = PAPER_REFERENCE


@dataclass
class Comparison:
    """Cell-level comparison, a per-table summary, the figure-level claims and caveats."""

    cells: pd.DataFrame  # table, key, column, ours, paper, diff, same_sign, paper_in_ci
    summary: pd.DataFrame  # table, n, mae, max_abs_diff, r, sign_agreement, paper_in_ci
    claims: pd.DataFrame  # claim, paper, ours, diff
    models: list[str]  # paper models we ran
    notes: list[str]


def paper_models_run(tables: dict[str, pd.DataFrame]) -> list[str]:
    """The paper's models present in our tables (by their short names)."""
    return [m for m in models_in(*tables.values()) if m in PAPER_MODELS]


def _compare_table(
    ours: pd.DataFrame, paper: pd.DataFrame, spec: PaperTable, models: list[str]
) -> pd.DataFrame:
    o = long_values(ours, spec)
    p = long_values(paper, spec)
    keys = [r for r in (spec.join or spec.rows) if r in o.columns and r in p.columns]
    if spec.per_model:
        rows = set(models) | ({"Average"} if set(models) == set(PAPER_MODELS) else set())
        o = o[o["model"].astype(str).isin(rows)]
        p = p[p["model"].astype(str).isin(rows)]
    m = o.merge(p[[*keys, "column", "value"]], on=[*keys, "column"], suffixes=("_ours", "_paper"))
    m = m.dropna(subset=["value_ours", "value_paper"])
    out = pd.DataFrame(
        {
            "table": spec.key,
            "key": m[keys].astype(str).agg(" / ".join, axis=1) if keys else "",
            "column": m["column"].astype(str),
            "ours": m["value_ours"].astype(float),
            "paper": m["value_paper"].astype(float),
        }
    )
    out["diff"] = out["ours"] - out["paper"]
    out["same_sign"] = np.sign(out["ours"].round(3)) == np.sign(out["paper"])
    if {"ci_low", "ci_high"} <= set(m.columns):
        out["paper_in_ci"] = (m["ci_low"] <= m["value_paper"]) & (m["value_paper"] <= m["ci_high"])
    else:
        out["paper_in_ci"] = np.nan
    return out.reset_index(drop=True)


def _summary(cells: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for key, g in cells.groupby("table", sort=False):
        r = g["ours"].corr(g["paper"]) if len(g) >= 3 and g["ours"].nunique() > 1 else np.nan
        in_ci = g["paper_in_ci"].dropna()
        rows.append(
            {
                "table": key,
                "n": len(g),
                "mae": g["diff"].abs().mean(),
                "max_abs_diff": g["diff"].abs().max(),
                "r": r,
                "sign_agreement": g["same_sign"].mean(),
                "paper_in_ci": in_ci.astype(float).mean() if len(in_ci) else np.nan,
            }
        )
    return pd.DataFrame(rows)


def _claim_value(claims: pd.DataFrame, start: str) -> float | None:
    hit = claims[claims["claim"].str.startswith(start)]
    return float(hit.iloc[0]["value"]) if len(hit) else None


def figure_claims(
    tables: dict[str, pd.DataFrame],
    ref: pd.DataFrame,
    scenarios: pd.DataFrame | None,
    pareto_share: float,
) -> pd.DataFrame:
    """The paper's figure-level numbers (Figs. 2, 3, 5, 8) next to ours."""
    out: list[tuple[str, float | None, float | None]] = []
    _, n80 = pareto_frame(tables["pareto"], pareto_share)
    out.append(
        (
            f"variations reaching {pareto_share:.0%} of cumulative |SBS| (Fig. 2)",
            _claim_value(ref, "attributes that account for nearly 80%"),
            float(n80),
        )
    )
    sc = scenario_frame(tables["sbs_by_scenario"], scenarios).set_index("label")
    for name, claim in (
        ("Stylish vs. Unstylish", "SBS of scenario Stylish"),
        ("Wealthy vs. Poor", "SBS of scenario Wealthy"),
    ):
        ours = float(sc.loc[name, "sbs"]) if name in sc.index else None
        out.append((f"SBS of {name} (Fig. 3)", _claim_value(ref, claim), ours))
    cat = tables["sbs_by_scenario_category_model"]
    for m in ("Gemma-3", "Gemma-4"):
        row = cat[
            (cat["model"].astype(str) == m)
            & (cat["scenario_category"].astype(str) == "Socioeconomic & Appearance")
        ]
        out.append(
            (
                f"|SBS| of Socioeconomic & Appearance scenarios, {m} (Fig. 5)",
                _claim_value(ref, f"|SBS| of Socioeconomic & Appearance scenarios, {m}"),
                float(row.iloc[0]["abs_sbs"]) if len(row) else None,
            )
        )
    wide = scenario_by_model(tables["sbs_by_scenario"], scenarios)
    if {"Gemma-3", "Gemma-4"} <= set(wide.columns):
        fit = pair_stats(tables.get("model_pair_regressions"), wide, "Gemma-3", "Gemma-4")
        out.append(
            (
                "Pearson r, Gemma-3 vs Gemma-4 (Fig. 8)",
                _claim_value(ref, "Pearson r, Gemma-3 vs Gemma-4"),
                fit.get("r"),
            )
        )
        out.append(
            (
                "slope, Gemma-4 on Gemma-3 (Fig. 8)",
                _claim_value(ref, "regression slope, Gemma-4 on Gemma-3"),
                fit.get("slope"),
            )
        )
    df = pd.DataFrame(out, columns=["claim", "paper", "ours"])
    df = df[df["ours"].notna() & df["paper"].notna()].reset_index(drop=True)
    df["diff"] = df["ours"] - df["paper"]
    return df


def paper_estimator_tables(
    tables: dict[str, pd.DataFrame],
) -> tuple[dict[str, pd.DataFrame], str | None]:
    """Tables 7 and 11 with the paper's 12-draw estimator's values, for the comparison.

    Table 7's zero-shift and large-shift shares and Table 11's significance rates mean different
    things under the ``exact`` expectation; ``estimator_comparison.csv`` holds them under the
    paper's estimator (column ``paper``), which is what the paper's numbers are compared with.
    Returns the (copied, overridden) tables and a note, or the tables unchanged and None.
    """
    cmp = tables.get("estimator_comparison")
    if cmp is None or cmp.empty:
        return tables, None
    out = dict(tables)
    cmp = cmp.assign(model=cmp["model"].astype(str), dimension=cmp["dimension"].fillna(""))
    changed = False
    t7 = tables.get("per_model_effects")
    if t7 is not None:
        t7 = t7.copy()
        for metric in ("zero_rate", "large_shift_rate"):
            v = cmp[cmp["metric"] == metric].set_index("model")["paper"]
            hit = t7["model"].astype(str).isin(v.index)
            t7.loc[hit, metric] = t7.loc[hit, "model"].astype(str).map(v)
            changed |= bool(hit.any())
        out["per_model_effects"] = t7
    t11 = tables.get("significance_rate_by_model")
    if t11 is not None:
        t11 = t11.copy()
        v = cmp[cmp["metric"] == "pct_scenarios_significant"].set_index(["model", "dimension"])
        key = list(zip(t11["model"].astype(str), t11["dimension"].astype(str)))
        new = [v["paper"].get(k, np.nan) for k in key]
        hit = pd.notna(new)
        t11.loc[hit, "pct_scenarios_significant"] = np.asarray(new, dtype=float)[hit]
        changed |= bool(hit.any())
        out["significance_rate_by_model"] = t11
    if not changed:
        return tables, None
    return out, (
        "Table 7's zero-shift and large-shift (|Δ| ≥ analysis.large_shift) shares and Table "
        "11's significance rates are "
        "compared under the paper's 12-draw estimator (3 seeds × 4 orderings; drawn from the "
        "exact distribution with the paper's seeds for an exact run); the exact-estimator "
        "values are beside them in estimator_comparison.csv."
    )


def compare(
    tables: dict[str, pd.DataFrame],
    reference_dir: Path,
    scenarios: pd.DataFrame | None = None,
    pareto_share: float = AnalysisSettings.pareto_share,
) -> Comparison | None:
    """Compare our tables with the paper's; None when none of the paper's models was run."""
    models = paper_models_run(tables)
    if not models:
        return None
    notes: list[str] = []
    tables, note = paper_estimator_tables(tables)
    if note:
        notes.append(note)
    ours_all = models_in(*tables.values())
    others = [m for m in ours_all if m not in PAPER_MODELS]
    if set(models) != set(PAPER_MODELS) or others:
        notes.append(
            "Pooled tables (3-6, 12) compare our pooled estimate over "
            f"{', '.join(ours_all)} with the paper's average over its six models "
            f"({', '.join(PAPER_MODELS)}); differences include the change of model set."
        )
    parts = []
    for spec in PAPER_TABLES:
        ref_path = reference_dir / f"{spec.file}.csv"
        if spec.file not in tables or not ref_path.exists():
            continue
        parts.append(_compare_table(tables[spec.file], pd.read_csv(ref_path), spec, models))
    cells = (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(
            columns=["table", "key", "column", "ours", "paper", "diff", "same_sign", "paper_in_ci"]
        )
    )
    ref_claims = pd.read_csv(reference_dir / "headline_numbers.csv")
    claims = figure_claims(tables, ref_claims, scenarios, pareto_share)
    notes.append("The paper prints 3-4 decimals; differences below 0.0005 are rounding.")
    return Comparison(cells, _summary(cells), claims, models, notes)
