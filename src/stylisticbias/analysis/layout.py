"""Paper-layout (wide) versions of the tables, with the paper's marks as text, and metrics.json.

Marks: ``**+0.056**`` = corrected p < ``analysis.strong_alpha`` (the paper's bold),
``<u>-0.002</u>`` = not significant (the paper's underline), plain = significant at alpha,
``+0.056†`` = a cell of a tested table that was not tested (Average rows, Table 4's Y-E gap,
too few faces), so that it never reads as significant. Quantities with no test at all (Table 7)
are plain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.table_registry import large_shift_header
from stylisticbias.benchmark import Benchmark, slug

DIM_LABEL = {"age": "Age", "body": "Body", "ethnicity": "Ethn.", "gender": "Gender"}


#: Suffix of a value whose table is tested but whose cell was not.
UNTESTED = "†"


def strong_mark(s: AnalysisSettings) -> str:
    """The significance label of the paper's bold cells: ``p<`` + ``analysis.strong_alpha``."""
    return f"p<{s.strong_alpha:g}"


def fmt(
    x: float,
    digits: int = 3,
    sign: bool = True,
    mark: str | None = None,
    strong: str = strong_mark(AnalysisSettings()),
) -> str:
    """``+0.056`` with the paper's mark; ``-`` for NaN.

    ``mark``: ``None`` = the quantity has no test (plain); ``strong`` (the label of corrected
    p < ``analysis.strong_alpha``, :func:`strong_mark`) bold; ``"ns"`` underlined; another
    ``p<...`` plain (significant); ``""`` or NaN = this cell was not tested (suffix
    :data:`UNTESTED`).
    """
    if x is None or not np.isfinite(x):
        return "-"
    s = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    if mark is None:
        return s
    if not isinstance(mark, str) or mark == "":
        return s + UNTESTED
    if mark == strong:
        return f"**{s}**"
    if mark == "ns":
        return f"<u>{s}</u>"
    return s


def _wide(
    df: pd.DataFrame,
    index: list[str],
    col: str,
    val: str,
    order: list[str],
    labels: Mapping[str, str],
    digits: int = 3,
    sign: bool = True,
    strong: str = strong_mark(AnalysisSettings()),
) -> pd.DataFrame:
    if df.empty or val not in df.columns:  # nothing estimable: the layout with no rows
        return pd.DataFrame(columns=[*index, *(labels.get(c, c) for c in order)])
    d = df.copy()
    marks = (
        d["significance"].fillna("").astype(str).tolist()
        if "significance" in d
        else [None] * len(d)
    )
    d["_txt"] = [fmt(v, digits, sign, m, strong) for v, m in zip(d[val], marks)]
    w = d.pivot_table(index=index, columns=col, values="_txt", aggfunc="first", sort=False)
    w = w[[c for c in order if c in w.columns]].rename(columns=labels)
    return w.reset_index().fillna("-")


def wide_tables(
    t: Mapping[str, pd.DataFrame], benchmark: Benchmark, s: AnalysisSettings
) -> dict[str, pd.DataFrame]:
    """``table02_vs`` ... ``table12_shift`` in the paper's rows and columns (marks, Table 7's
    large-shift header and Table 12's group abbreviations from the settings)."""
    out: dict[str, pd.DataFrame] = {}
    strong = strong_mark(s)
    abbrev = s.group_abbrev
    out["table02_vs"] = _wide(
        t["vs_by_model"],
        ["model"],
        "dimension",
        "vs",
        ["age", "body", "ethnicity", "gender"],
        DIM_LABEL,
        sign=False,
        strong=strong,
    )
    out["table03_sbs_category"] = _wide(
        t["sbs_category_by_demographic"],
        ["category"],
        "dimension",
        "sbs",
        ["age", "gender", "ethnicity", "body"],
        DIM_LABEL,
        strong=strong,
    )
    ages = list(benchmark.demographics["age"])
    t4 = t["sbs_fashion_by_age"].copy()
    lab4 = {
        ages[0]: "Young",
        ages[1]: "Middle-aged",
        ages[-1]: "Elderly",
        "elderly_minus_young": "Y-E",
    }
    out["table04_fashion_age"] = _wide(
        t4, ["variation"], "group", "sbs", [*ages, "elderly_minus_young"], lab4, strong=strong
    ).rename(columns={"variation": "Style"})
    t5 = t["tattoo_sbs"].copy()
    t5["Dim."] = t5["dimension"].map(DIM_LABEL)
    t5["SBS"] = [
        fmt(v, 3, True, m, strong) for v, m in zip(t5["sbs"], t5["significance"].fillna(""))
    ]
    out["table05_tattoo"] = t5[["variation", "Dim.", "group", "SBS"]].rename(
        columns={"variation": "Variation", "group": "Group"}
    )
    body = list(benchmark.demographics["body_type"])
    out["table06_fashion_body"] = _wide(
        t["sbs_fashion_by_body"],
        ["variation"],
        "group",
        "sbs",
        body,
        {b: b.capitalize() for b in body},
        strong=strong,
    ).rename(columns={"variation": "Variation"})
    t7 = t["per_model_effects"]
    out["table07_model_effects"] = pd.DataFrame(
        {
            "Model": t7["model"],
            "SBS": [fmt(v, 4) for v in t7["sbs"]],
            "Cohen's d": [fmt(v, 3) for v in t7["cohens_d"]],
            "Zero": [fmt(v, 3, sign=False) for v in t7["zero_rate"]],
            large_shift_header(s.large_shift): [
                fmt(v, 3, sign=False) for v in t7["large_shift_rate"]
            ],
        }
    )
    t11 = t["significance_rate_by_model"].copy()
    t11["txt"] = [f"{v:.0f}%" if np.isfinite(v) else "-" for v in t11["pct_scenarios_significant"]]
    w11 = t11.pivot_table(
        index="model", columns="dimension", values="txt", aggfunc="first", sort=False
    )
    lab11 = {"age": "Age", "body": "Body Type", "ethnicity": "Ethnicity", "gender": "Gender"}
    out["table11_significance_rate"] = (
        w11[[c for c in lab11 if c in w11.columns]]
        .rename(columns=lab11)
        .reset_index()
        .rename(columns={"model": "Model"})
    )
    t12 = t["shift_by_variation_demographic"].copy()
    t12["_txt"] = [
        fmt(v, 3, True, m, strong) if a else "-"
        for v, m, a in zip(t12["delta"], t12["significance"].fillna(""), t12["applicable"])
    ]
    groups = [
        g
        for col in ("age", "gender", "ethnicity", "body_type")
        for g in benchmark.demographics[col]
    ]
    w12 = t12.pivot_table(
        index=["category", "variation"], columns="group", values="_txt", aggfunc="first", sort=False
    )
    w12 = w12[[g for g in groups if g in w12.columns]].rename(columns=dict(abbrev))
    out["table12_shift"] = w12.reset_index().rename(
        columns={"category": "Category", "variation": "Variation"}
    )
    out["table03_sbs_category"] = out["table03_sbs_category"].rename(
        columns={"category": "Category"}
    )
    out["table02_vs"] = out["table02_vs"].rename(columns={"model": "Model"})
    return out


def _num(x: Any) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def metrics_json(
    t: Mapping[str, pd.DataFrame],
    names: Mapping[str, str],
    simulated: Mapping[str, bool],
    dims: Mapping[str, str],
) -> dict[str, Any]:
    """Nested per-model metrics (DVC flattens them to ``<model>.vs.age`` ...).

    ``names`` maps the config model name (the key) to the display name used in the tables.
    """
    out: dict[str, Any] = {}
    for model, disp in names.items():

        def one(df: pd.DataFrame, col: str, key: str, value: str = "sbs", m: str = disp) -> dict:
            d = df[df["model"] == m]
            return {slug(str(k)): _num(v) for k, v in zip(d[key], d[value])} if col else {}

        vs = t["vs_by_model"]
        vs = vs[vs.model == disp]
        pm = t["per_model_effects"]
        pm = pm[pm.model == disp]
        par = t["pareto"]
        par = par[par.model == disp]
        cat = t["sbs_by_category_model"]
        sc = t["sbs_by_scenario"]
        pos, let = t.get("position_bias"), t.get("letter_bias")
        inv = t.get("invalid_rates")
        overall = t["sbs_overall"]
        out[model] = {
            "simulated": bool(simulated.get(model, False)),
            "vs": {dims[d]: _num(v) for d, v in zip(vs["dimension"], vs["vs"])},
            "sbs": {
                "overall": _num(overall.loc[overall.model == disp, "sbs"].squeeze())
                if (overall.model == disp).any()
                else None,
                "category": one(cat, "x", "category"),
                "scenario": {
                    slug(p): _num(v)
                    for p, v in zip(
                        sc.loc[sc.model == disp, "positive"], sc.loc[sc.model == disp, "sbs"]
                    )
                },
                "scenario_category": one(
                    t["sbs_by_scenario_category_model"], "x", "scenario_category"
                ),
            },
            "pareto": {
                "n_variations_80": int(par["n_variations_threshold"].iloc[0]) if len(par) else None
            },
            "cohens_d": _num(pm["cohens_d"].squeeze()) if len(pm) else None,
            "zero_share": _num(pm["zero_rate"].squeeze()) if len(pm) else None,
            "large_shift_share": _num(pm["large_shift_rate"].squeeze()) if len(pm) else None,
        }
        for key, df, col in (("position_bias", pos, "share"), ("letter_bias", let, "share")):
            if df is not None and (df.model == disp).any():
                out[model][key] = _num(df.loc[df.model == disp, col].squeeze())
        if inv is not None and ((inv.model == disp) & (inv.scenario_id == 0)).any():
            out[model]["invalid_rate"] = _num(
                inv.loc[(inv.model == disp) & (inv.scenario_id == 0), "invalid_rate"].squeeze()
            )
    return out
