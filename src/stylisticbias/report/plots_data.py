"""The data behind each figure, shaped from the ``analyze`` tables (pure pandas, no drawing).
The report also writes some of these frames to ``reports/plots/*.csv`` for the ``plots:``
entries of dvc.yaml (``dvc plots show``).

Every table arrives read and validated through the table registry
(:mod:`stylisticbias.analysis.table_registry`), so the columns used here are the registry's
vocabulary (``sbs``, ``abs_sbs``, ``ci_low`` ...), never guessed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.errors import StylisticBiasError

#: Row labels that stand for "all models pooled" rather than one model (analyze writes
#: ``All`` for pooled-over-deltas rows and ``Average`` for the paper's averages of model rows).
POOLED_LABELS: frozenset[str] = frozenset({"All", "Average", "all", "average", "pooled"})


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


def scenario_labels(df: pd.DataFrame) -> pd.Series:
    """``"Stylish vs. Unstylish"`` per row, from the table's ``positive``/``negative`` poles."""
    return df["positive"].astype(str) + " vs. " + df["negative"].astype(str)


def scenario_frame(
    sbs_by_scenario: pd.DataFrame, scenarios: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per scenario (pooled over models): label, category, sbs, abs_sbs, ci_low/ci_high,
    pval, pval_corr. ``abs_sbs`` is the mean over models of each model's |SBS| where the
    table has per-model rows. (``scenarios`` is accepted for compatibility; the table carries
    the scenario's poles and category.)"""
    keys = ["scenario_id", "positive", "negative", "scenario_category"]
    df = pooled(sbs_by_scenario, keys, "reports/tables/sbs_by_scenario.csv")
    out = pd.DataFrame({"label": scenario_labels(df).to_numpy()})
    out["scenario_id"] = df["scenario_id"].to_numpy()
    out["category"] = df["scenario_category"].to_numpy()
    out["sbs"] = df["sbs"].to_numpy(dtype=float)
    out["abs_sbs"] = df["abs_sbs"].to_numpy(dtype=float)
    models = per_model(sbs_by_scenario)
    if not models.empty:  # mean over models of |SBS_m|
        per = models.groupby("scenario_id")["abs_sbs"].mean()
        out["abs_sbs"] = out["scenario_id"].map(per).fillna(out["abs_sbs"]).to_numpy(dtype=float)
    for c in ("ci_low", "ci_high", "pval_corr", "pval"):
        out[c] = df[c].to_numpy(dtype=float)
    return out.sort_values("sbs").reset_index(drop=True)


def scenario_by_model(
    sbs_by_scenario: pd.DataFrame, scenarios: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Wide per-scenario mean Delta: index = scenario label, columns = models (+ ``category``)."""
    df = per_model(sbs_by_scenario).copy()
    if df.empty:
        return pd.DataFrame()
    df["label"] = scenario_labels(df).to_numpy()
    wide = df.pivot_table(index="label", columns="model", values="sbs", aggfunc="mean", sort=False)
    frame = scenario_frame(sbs_by_scenario).set_index("label")
    wide["category"] = frame["category"].reindex(wide.index)
    return wide


def pareto_frame(pareto: pd.DataFrame, share: float) -> tuple[pd.DataFrame, int]:
    """Variations sorted by |SBS| (pooled over models) with the cumulative share of the total,
    and the number of variations needed to reach ``share`` (``analysis.pareto_share``) of it."""
    keys = ["category", "variation"]
    df = pooled(pareto, keys, "reports/tables/pareto.csv")
    df = df.groupby(keys, as_index=False, sort=False)["abs_sbs"].mean()
    df = df.sort_values("abs_sbs", ascending=False).reset_index(drop=True)
    total = float(df["abs_sbs"].sum())
    out = pd.DataFrame({"label": df["variation"].astype(str), "abs_sbs": df["abs_sbs"]})
    out["category"] = df["category"].astype(str)
    out["cum_share"] = out["abs_sbs"].cumsum() / total if total > 0 else 0.0
    n = int(np.searchsorted(out["cum_share"].to_numpy(), share - 1e-12) + 1) if total > 0 else 0
    return out, min(n, len(out))


#: The row key of each SBS profile table that :func:`category_by_model` spreads over models.
PROFILE_KEYS: dict[str, str] = {
    "sbs_by_scenario_category_model": "scenario_category",
    "sbs_by_category_model": "category",
}


def category_by_model(df: pd.DataFrame, name: str, absolute: bool = False) -> pd.DataFrame:
    """Wide table: index = category (scenario or attribute), columns = models.

    ``name`` is the registry name of the table (``sbs_by_scenario_category_model`` or
    ``sbs_by_category_model``); ``absolute`` plots ``abs_sbs`` instead of ``sbs``.
    """
    key = name.rsplit("/", 1)[-1].removesuffix(".csv")
    if key not in PROFILE_KEYS:
        raise StylisticBiasError(
            f"category_by_model: {name!r} is not an SBS profile table; valid: "
            + ", ".join(PROFILE_KEYS)
        )
    cat = PROFILE_KEYS[key]
    val = "abs_sbs" if absolute else "sbs"
    rows = per_model(df)
    if rows.empty:  # a table without per-model rows: one pooled column
        rows = df.assign(model="all")
    wide = rows.pivot_table(index=cat, columns="model", values=val, aggfunc="mean", sort=False)
    return wide.loc[wide.mean(axis=1).sort_values(ascending=False).index]


def variance_frame(cross: pd.DataFrame, scenarios: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per scenario cross-model variance, sorted descending, with the analysis's top-quartile
    flag (``analysis.disagreement_quantile``)."""
    out = pd.DataFrame({"label": scenario_labels(cross).to_numpy()})
    out["category"] = cross["scenario_category"].to_numpy()
    out["variance"] = cross["variance"].to_numpy(dtype=float)
    out["top_quartile"] = cross["top_quartile"].astype(bool).to_numpy()
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
    if regs is not None:
        row = regs[(regs["model_x"].astype(str) == mx) & (regs["model_y"].astype(str) == my)]
        if not row.empty:
            r = row.iloc[0]
            return {k: float(r[k]) for k in ("slope", "intercept", "r", "pval", "n") if k in r}
    return pair_fit(wide[mx], wide[my])
