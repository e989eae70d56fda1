"""Headline findings, computed from the analysis tables (one sentence each, numbers included)."""

from __future__ import annotations

import pandas as pd

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.table_registry import large_shift_header
from stylisticbias.report.plots_data import (
    chosen_pair,
    pair_stats,
    pareto_frame,
    per_model,
    pooled,
    scenario_by_model,
    scenario_frame,
)
from stylisticbias.report.tables import DIMENSION_ALIASES


def _vs_ranking(vs: pd.DataFrame) -> list[str]:
    """Dimensions (and models) ranked by the de-biased VS when the table has it.

    The paper's VS carries a noise floor (sampling error of the group means) that grows with the
    number and smallness of a dimension's groups, so ranking by it can put pure noise above a
    real effect; the de-biased VS removes that floor (docs/statistics.md).
    """
    debiased = "vs_debiased" in vs.columns and vs["vs_debiased"].notna().any()
    eff = "vs_debiased" if debiased else "vs"
    vs = vs.assign(dimension=vs["dimension"].replace(DIMENSION_ALIASES))
    pool = pooled(vs, ["dimension"], "vs_by_model.csv").groupby("dimension")
    dims = pool[eff].mean().sort_values(ascending=False)
    if debiased:
        raw = pool["vs"].mean()
        floor = pool["noise_floor"].mean()
        out = [
            "VS by demographic dimension (pooled over models), ranked by the de-biased VS "
            "(the paper's VS minus its noise floor: sampling error of the group means inflates "
            "the paper's VS, more for dimensions with more and smaller groups, so its ranking "
            "can put pure noise above a real effect): "
            + ", ".join(
                f"{d} {v:.3f} (paper VS {raw[d]:.3f}, noise floor {floor[d]:.3f})"
                for d, v in dims.items()
            )
            + "."
        ]
    else:
        out = [
            "VS by demographic dimension (pooled over models): "
            + ", ".join(f"{d} {v:.3f}" for d, v in dims.items())
            + "."
        ]
    pm = per_model(vs)
    if pm["model"].nunique() > 1:
        by_model = pm.groupby("model")[eff].mean().sort_values(ascending=False)
        label = "de-biased VS" if debiased else "VS"
        out.append(
            f"Models by mean {label}: "
            + ", ".join(f"{m} {v:.3f}" for m, v in by_model.items())
            + "."
        )
    return out


def paper_pareto(reference: pd.DataFrame | None, pareto_share: float) -> str:
    """The paper's Fig. 2 claim from its headline numbers (``conf/reference/paper``), e.g.
    ``" (paper: about 15 of 34)"``; empty without the reference or when ``pareto_share`` is not
    the paper's share."""
    if reference is None:
        return ""

    def value(start: str) -> float | None:
        hit = reference[reference["claim"].astype(str).str.startswith(start)]
        return float(hit.iloc[0]["value"]) if len(hit) else None

    n = value("attributes that account for nearly")
    pct = value("share of total variation (cumulative |SBS|)")
    total = value("variation values retained for evaluation")
    if n is None or pct is None or total is None or round(pareto_share * 100) != round(pct):
        return ""
    return f" (paper: about {n:.0f} of {total:.0f})"


def findings(
    tables: dict[str, pd.DataFrame],
    scenarios: pd.DataFrame | None,
    pareto_share: float,
    top: int = 5,
    reference: pd.DataFrame | None = None,
    large_shift: float = AnalysisSettings.large_shift,
) -> list[str]:
    """Bullet sentences for the report's headline section (``reference``: the paper's headline
    numbers, ``conf/reference/paper/headline_numbers.csv``)."""
    out: list[str] = []
    par, n80 = pareto_frame(tables["pareto"], pareto_share)
    lead = ", ".join(f"{r.label} ({r.abs_sbs:.3f})" for r in par.head(top).itertuples())
    out.append(f"Largest |SBS| variations: {lead}.")
    out.append(
        f"{n80} of {len(par)} variations account for {pareto_share:.0%} of the total "
        f"|SBS|{paper_pareto(reference, pareto_share)}."
    )
    sc = scenario_frame(tables["sbs_by_scenario"], scenarios)
    hi = sc.loc[sc["sbs"].abs().idxmax()]
    lo = sc.loc[sc["sbs"].abs().idxmin()]
    out.append(
        f"Strongest scenario: {hi['label']} (SBS {hi['sbs']:+.3f}); weakest: "
        f"{lo['label']} (SBS {lo['sbs']:+.3f})."
    )
    cats = sc.groupby("category")["abs_sbs"].mean().sort_values(ascending=False)
    out.append(
        "Scenario categories by mean |SBS|: "
        + ", ".join(f"{c} {v:.3f}" for c, v in cats.items())
        + "."
    )
    out += _vs_ranking(tables["vs_by_model"])
    pme = per_model(tables["per_model_effects"])
    if len(pme) > 1:
        s = pme.sort_values("sbs", ascending=False)
        out.append(
            "Models by overall SBS: "
            + ", ".join(f"{r['model']} {r['sbs']:+.4f}" for _, r in s.iterrows())
            + "."
        )
    wide = scenario_by_model(tables["sbs_by_scenario"], scenarios)
    models = [c for c in wide.columns if c != "category"]
    pair = chosen_pair(models)
    if pair:
        fit = pair_stats(tables.get("model_pair_regressions"), wide, *pair)
        flips = int(((wide[pair[0]] * wide[pair[1]]) < 0).sum())
        out.append(
            f"{pair[1]} on {pair[0]} per-scenario mean Δ: slope {fit['slope']:.2f}, "
            f"r {fit['r']:.2f}; {flips} scenario(s) change sign."
        )
    out += _undecided(tables.get("undecided_mass"))
    out += _estimators(tables.get("estimator_comparison"), large_shift)
    return out


def _estimators(cmp: pd.DataFrame | None, large_shift: float) -> list[str]:
    """The paper-comparable (12-draw) and exact estimators side by side where they differ."""
    if cmp is None or cmp.empty:
        return []
    parts = []
    labels = {
        "zero_rate": "zero-shift share",
        "large_shift_rate": f"{large_shift_header(large_shift)} share",
    }
    for metric, label in labels.items():
        sub = cmp[cmp["metric"] == metric]
        if len(sub):
            parts.append(
                f"{label} {sub['paper'].mean():.3f} (paper's 12-draw estimator) vs "
                f"{sub['exact'].mean():.3f} (exact expectation)"
            )
    sig = cmp[cmp["metric"] == "pct_scenarios_significant"]
    if len(sig):
        parts.append(
            f"Table 11 significance rate {sig['paper'].mean():.1f}% vs {sig['exact'].mean():.1f}%"
        )
    if not parts:
        return []
    return [
        "Paper-comparable vs exact estimator (mean over models; compare the paper's tables with "
        "the first): " + "; ".join(parts) + " (estimator_comparison.csv)."
    ]


def _undecided(und: pd.DataFrame | None) -> list[str]:
    """One sentence on undecided (pruned) mass when any model has some."""
    if und is None or und.empty:
        return []
    rows = und[und["category"].astype(str) == "all"]
    if rows.empty or not (rows["undecided_max"] > 0).any():
        return []
    parts = [
        f"{r.model}: mean {r.undecided_mean:.4f}, max {r.undecided_max:.4f}, "
        f"{int(r.n_excluded)} of {int(r.n_rows)} rows excluded, overall SBS {r.sbs:+.4f} "
        f"bounded in [{r.sbs_low:+.4f}, {r.sbs_high:+.4f}]"
        for r in rows.itertuples()
    ]
    worst = und["max_shift"].max()
    return [
        "Undecided (pruned) answer mass, left out of φ (unbiased only if it would split like "
        "the rest): " + "; ".join(parts) + f". It could move any reported SBS by at most "
        f"{worst:.4f} (undecided_mass.csv)."
    ]
