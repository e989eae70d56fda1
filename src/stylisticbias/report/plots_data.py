"""The data behind each figure, shaped from the ``analyze`` tables (pure pandas, no drawing).
The report also writes some of these frames to ``reports/plots/*.csv`` for the ``plots:``
entries of dvc.yaml (``dvc plots show``).

Column lookup is tolerant to the effect column's name (``sbs``/``delta``/``effect``, as in the
paper's reference CSVs) and fails with one line naming the table and the columns it has.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.errors import StylisticBiasError

#: Row labels that stand for "all models pooled" rather than one model (analyze writes
#: ``All`` for pooled-over-deltas rows and ``Average`` for the paper's averages of model rows).
POOLED_LABELS: frozenset[str] = frozenset({"All", "Average", "all", "average", "pooled"})
EFFECT_COLUMNS: tuple[str, ...] = ("sbs", "delta", "effect", "mean_delta", "vs")
#: |SBS| of a group (the absolute value of its mean Delta); not ``mean_abs_delta`` (mean |Delta|).
ABS_COLUMNS: tuple[str, ...] = ("abs_sbs", "abs_effect", "mean_abs_sbs")


def pick(df: pd.DataFrame, where: str, candidates: Iterable[str]) -> str:
    """The first of ``candidates`` that is a column of ``df``; else one clear error."""
    cands = list(candidates)
    for c in cands:
        if c in df.columns:
            return c
    raise StylisticBiasError(
        f"{where}: none of the columns {cands} found; it has {list(df.columns)}"
    )


def maybe(df: pd.DataFrame, candidates: Iterable[str]) -> str | None:
    """The first of ``candidates`` that is a column of ``df``, or None."""
    return next((c for c in candidates if c in df.columns), None)


def per_model(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of individual models (``Average``/pooled rows dropped)."""
    if "model" not in df.columns:
        return df.iloc[0:0]
    return df[~df["model"].astype(str).isin(POOLED_LABELS)]


def pooled(df: pd.DataFrame, keys: list[str], where: str) -> pd.DataFrame:
    """Rows pooled over models: the table's ``Average`` rows if it has them, else the mean of
    the per-model rows over ``keys`` (a table without a ``model`` column is already pooled)."""
    if "model" not in df.columns:
        return df.copy()
    avg = df[df["model"].astype(str).isin(POOLED_LABELS)]
    if not avg.empty:
        return avg.copy()
    num = [
        c
        for c in df.columns
        if c not in keys and c != "model" and pd.api.types.is_numeric_dtype(df[c])
    ]
    if not num:
        raise StylisticBiasError(f"{where}: no numeric columns to pool over models")
    return df.groupby(keys, as_index=False, sort=False)[num].mean()


def models_in(*frames: pd.DataFrame | None) -> list[str]:
    """Model names (pooled labels excluded) in order of first appearance."""
    out: dict[str, None] = {}
    for df in frames:
        if df is not None and "model" in df.columns:
            out.update(dict.fromkeys(per_model(df)["model"].astype(str)))
    return list(out)


def scenario_labels(df: pd.DataFrame, scenarios: pd.DataFrame | None) -> pd.Series:
    """``"Stylish vs. Unstylish"`` per row, from the table's pole columns or the benchmark."""
    if {"positive", "negative"} <= set(df.columns):
        return df["positive"].astype(str) + " vs. " + df["negative"].astype(str)
    if "scenario" in df.columns:
        return df["scenario"].astype(str)
    if scenarios is not None and "scenario_id" in df.columns:
        lab = scenarios.set_index("scenario_id")
        names = lab["positive"] + " vs. " + lab["negative"]
        return df["scenario_id"].map(names).fillna(df["scenario_id"].astype(str))
    raise StylisticBiasError("sbs_by_scenario.csv: no scenario_id/scenario/positive columns")


def scenario_frame(sbs_by_scenario: pd.DataFrame, scenarios: pd.DataFrame | None) -> pd.DataFrame:
    """Per scenario (pooled over models): label, category, sbs, abs_sbs, ci_low/ci_high."""
    where = "reports/tables/sbs_by_scenario.csv"
    eff = pick(sbs_by_scenario, where, EFFECT_COLUMNS)
    keys = [
        c
        for c in ("scenario_id", "scenario", "positive", "negative", "scenario_category")
        if c in sbs_by_scenario.columns
    ]
    df = pooled(sbs_by_scenario, keys, where)
    out = pd.DataFrame({"label": scenario_labels(df, scenarios).to_numpy()})
    out["scenario_id"] = (
        df["scenario_id"].to_numpy() if "scenario_id" in df else np.arange(len(df)) + 1
    )
    cat = maybe(df, ("scenario_category", "category"))
    if cat:
        out["category"] = df[cat].to_numpy()
    elif scenarios is not None:
        out["category"] = out["scenario_id"].map(scenarios.set_index("scenario_id")["category"])
    else:
        out["category"] = "all"
    out["sbs"] = df[eff].to_numpy(dtype=float)
    absc = maybe(df, ABS_COLUMNS)
    out["abs_sbs"] = df[absc].to_numpy(dtype=float) if absc else np.abs(out["sbs"])
    models = per_model(sbs_by_scenario)
    if absc and "scenario_id" in models and not models.empty:  # mean over models of |SBS_m|
        per = models.groupby("scenario_id")[absc].mean()
        out["abs_sbs"] = out["scenario_id"].map(per).fillna(out["abs_sbs"]).to_numpy(dtype=float)
    for c in ("ci_low", "ci_high", "pval_corr", "pval"):
        if c in df.columns:
            out[c] = df[c].to_numpy(dtype=float)
    return out.sort_values("sbs").reset_index(drop=True)


def scenario_by_model(
    sbs_by_scenario: pd.DataFrame, scenarios: pd.DataFrame | None
) -> pd.DataFrame:
    """Wide per-scenario mean Delta: index = scenario label, columns = models (+ ``category``)."""
    where = "reports/tables/sbs_by_scenario.csv"
    eff = pick(sbs_by_scenario, where, EFFECT_COLUMNS)
    df = per_model(sbs_by_scenario).copy()
    if df.empty:
        return pd.DataFrame()
    df["label"] = scenario_labels(df, scenarios).to_numpy()
    wide = df.pivot_table(index="label", columns="model", values=eff, aggfunc="mean", sort=False)
    frame = scenario_frame(sbs_by_scenario, scenarios).set_index("label")
    wide["category"] = frame["category"].reindex(wide.index)
    return wide


def pareto_frame(pareto: pd.DataFrame, share: float = 0.8) -> tuple[pd.DataFrame, int]:
    """Variations sorted by |SBS| (pooled over models) with the cumulative share of the total,
    and the number of variations needed to reach ``share`` of it."""
    where = "reports/tables/pareto.csv"
    lab = pick(pareto, where, ("variation", "value", "label", "attribute"))
    absc = maybe(pareto, ABS_COLUMNS)
    if absc is None:
        eff = pick(pareto, where, EFFECT_COLUMNS)
        pareto = pareto.assign(abs_sbs=pareto[eff].abs())
        absc = "abs_sbs"
    keys = [c for c in ("category", "attribute", lab) if c in pareto.columns]
    keys = list(dict.fromkeys(keys))
    df = pooled(pareto, keys, where)
    df = df.groupby(keys, as_index=False, sort=False)[absc].mean()
    df = df.sort_values(absc, ascending=False).reset_index(drop=True)
    total = float(df[absc].sum())
    out = pd.DataFrame({"label": df[lab].astype(str), "abs_sbs": df[absc].astype(float)})
    if "category" in df.columns:
        out["category"] = df["category"].astype(str)
    out["cum_share"] = out["abs_sbs"].cumsum() / total if total > 0 else 0.0
    n = int(np.searchsorted(out["cum_share"].to_numpy(), share - 1e-12) + 1) if total > 0 else 0
    return out, min(n, len(out))


def category_by_model(df: pd.DataFrame, where: str, absolute: bool = False) -> pd.DataFrame:
    """Wide table: index = category (scenario or attribute), columns = models."""
    cat = pick(df, where, ("scenario_category", "category"))
    if absolute:
        val = maybe(df, ABS_COLUMNS)
        if val is None:
            val = pick(df, where, EFFECT_COLUMNS)
            df = df.assign(**{val: df[val].abs()})
    else:
        val = pick(df, where, EFFECT_COLUMNS)
    rows = per_model(df)
    if rows.empty:  # a table without per-model rows: one pooled column
        rows = df.assign(model="all")
    wide = rows.pivot_table(index=cat, columns="model", values=val, aggfunc="mean", sort=False)
    return wide.loc[wide.mean(axis=1).sort_values(ascending=False).index]


def variance_frame(cross: pd.DataFrame, scenarios: pd.DataFrame | None) -> pd.DataFrame:
    """Per scenario cross-model variance, sorted descending, with the top-quartile flag."""
    where = "reports/tables/cross_model_variance.csv"
    var = pick(cross, where, ("variance", "var", "cross_model_variance", "sbs_variance"))
    out = pd.DataFrame({"label": scenario_labels(cross, scenarios).to_numpy()})
    cat = maybe(cross, ("scenario_category", "category"))
    if cat:
        out["category"] = cross[cat].to_numpy()
    elif scenarios is not None and "scenario_id" in cross:
        out["category"] = (
            cross["scenario_id"].map(scenarios.set_index("scenario_id")["category"]).to_numpy()
        )
    else:
        out["category"] = "all"
    out["variance"] = cross[var].to_numpy(dtype=float)
    if "top_quartile" in cross.columns:
        out["top_quartile"] = cross["top_quartile"].astype(str).str.lower().eq("true").to_numpy()
    else:
        out["top_quartile"] = out["variance"] >= out["variance"].quantile(0.75)
    return out.sort_values("variance", ascending=False).reset_index(drop=True)


def pair_fit(x: pd.Series, y: pd.Series) -> dict[str, float]:
    """OLS of y on x over shared non-missing scenarios: slope, intercept, r, pval, n."""
    ok = x.notna() & y.notna()
    if ok.sum() < 3 or x[ok].nunique() < 2:
        return {
            "slope": np.nan,
            "intercept": np.nan,
            "r": np.nan,
            "pval": np.nan,
            "n": int(ok.sum()),
        }
    res = stats.linregress(x[ok].to_numpy(float), y[ok].to_numpy(float))
    return {
        "slope": float(res.slope),
        "intercept": float(res.intercept),
        "r": float(res.rvalue),
        "pval": float(res.pvalue),
        "n": int(ok.sum()),
    }


def chosen_pair(models: list[str]) -> tuple[str, str] | None:
    """Gemma-3 vs Gemma-4 when both ran (the paper's Fig. 8), else the first two models."""
    if "Gemma-3" in models and "Gemma-4" in models:
        return "Gemma-3", "Gemma-4"
    return (models[0], models[1]) if len(models) >= 2 else None


def pair_stats(regs: pd.DataFrame | None, wide: pd.DataFrame, mx: str, my: str) -> dict[str, float]:
    """Regression of ``my`` on ``mx``: the analysis's row when present, else fitted here."""
    if regs is not None and {"model_x", "model_y"} <= set(regs.columns):
        row = regs[(regs["model_x"].astype(str) == mx) & (regs["model_y"].astype(str) == my)]
        if not row.empty:
            r = row.iloc[0]
            return {k: float(r[k]) for k in ("slope", "intercept", "r", "pval", "n") if k in r}
    return pair_fit(wide[mx], wide[my])
