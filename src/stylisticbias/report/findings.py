"""Headline findings, computed from the analysis tables (one sentence each, numbers included)."""

from __future__ import annotations

import pandas as pd

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.table_registry import large_shift_header
from stylisticbias.report.markdown import format_p
from stylisticbias.report.plots_data import (
    POOLED_LABELS,
    chosen_pair,
    pair_stats,
    pareto_frame,
    per_model,
    pooled,
    scenario_by_model,
    scenario_frame,
)
from stylisticbias.report.tables import DIMENSION_ALIASES


def _interval(row: pd.Series | None, ci: float, value: str = "sbs") -> str:
    """``SBS +0.032, 95% CI [+0.013, +0.050], corrected p = 0.004`` of a table row (what the
    row has of it)."""
    if row is None:
        return ""
    parts = [f"SBS {float(row[value]):+.3f}"] if value in row else []
    lo, hi = row.get("ci_low"), row.get("ci_high")
    if lo is not None and hi is not None and pd.notna(lo) and pd.notna(hi):
        parts.append(f"{ci:.0%} CI [{float(lo):+.3f}, {float(hi):+.3f}]")
    p = row.get("pval_corr")
    if p is not None and pd.notna(p):
        parts.append(f"corrected p {_p_text(float(p))}")
    return ", ".join(parts)


def _p_text(p: float) -> str:
    text = format_p(p)
    return text if text.startswith("<") else f"= {text}"


def _pooled_row(df: pd.DataFrame | None, **eq: object) -> pd.Series | None:
    """The all-models row of a long table matching ``eq``."""
    if df is None or "model" not in df.columns:
        return None
    mask = df["model"].astype(str).isin(POOLED_LABELS)
    for k, v in eq.items():
        mask &= df[k].astype(str) == str(v)
    hit = df[mask]
    return hit.iloc[0] if len(hit) else None


def _significant(vs: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Per model x dimension: whether the VS test is significant (corrected p < alpha)."""
    pm = per_model(vs)
    if "pval_corr" not in pm.columns:  # a table without tests: nothing to say
        return pm.iloc[0:0].assign(sig=pd.Series(dtype=bool))
    return pm.assign(sig=pd.to_numeric(pm["pval_corr"], errors="coerce") < alpha)


def _vs_ranking(vs: pd.DataFrame, alpha: float = AnalysisSettings.alpha) -> list[str]:
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
    sig = _significant(vs, alpha)
    n_models = sig["model"].nunique()
    k_dim = sig.groupby("dimension")["sig"].sum()

    def signif(d: str) -> str:
        return f"; significant in {int(k_dim.get(d, 0))}/{n_models} models" if n_models else ""

    if debiased:
        raw = pool["vs"].mean()
        floor = pool["noise_floor"].mean()
        out = [
            "VS by demographic dimension (pooled over models), ranked by the de-biased VS "
            "(the paper's VS minus its noise floor: sampling error of the group means inflates "
            "the paper's VS, more for dimensions with more and smaller groups, so its ranking "
            "can put pure noise above a real effect): "
            + ", ".join(
                f"{d} {v:.3f} (paper VS {raw[d]:.3f}, noise floor {floor[d]:.3f}{signif(d)})"
                for d, v in dims.items()
            )
            + "."
        ]
    else:
        out = [
            "VS by demographic dimension (pooled over models): "
            + ", ".join(
                f"{d} {v:.3f}" + (f" ({signif(d)[2:]})" if signif(d) else "")
                for d, v in dims.items()
            )
            + "."
        ]
    pm = per_model(vs)
    if pm["model"].nunique() > 1:
        by_model = pm.groupby("model")[eff].mean().sort_values(ascending=False)
        k_model = sig.groupby("model")["sig"].sum()
        n_dims = sig.groupby("model")["sig"].size()
        label = "de-biased VS" if debiased else "VS"

        def dims_sig(m: str) -> str:
            if m not in n_dims:
                return ""
            return (
                f" ({int(k_model.get(m, 0))}/{int(n_dims[m])} dimensions significant, "
                f"corrected p < {alpha:g})"
            )

        out.append(
            f"Models by mean {label} over the dimensions: "
            + ", ".join(f"{m} {v:.3f}{dims_sig(m)}" for m, v in by_model.items())
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
    alpha: float = AnalysisSettings.alpha,
    ci: float = AnalysisSettings.ci,
) -> list[str]:
    """Bullet sentences for the report's headline section, each number with its interval or
    its significance (``reference``: the paper's headline numbers,
    ``conf/reference/paper/headline_numbers.csv``)."""
    out: list[str] = []
    par, n80 = pareto_frame(tables["pareto"], pareto_share)
    var = tables.get("sbs_by_variation_model")

    def lead_item(r: object) -> str:
        row = _pooled_row(var, category=r.category, variation=r.label)  # type: ignore[attr-defined]
        pooled_sbs = _interval(row, ci)
        extra = f"; pooled {pooled_sbs}" if pooled_sbs else ""
        return f"{r.label} (|SBS| {r.abs_sbs:.3f}{extra})"  # type: ignore[attr-defined]

    lead = ", ".join(lead_item(r) for r in par.head(top).itertuples())
    out.append(f"Largest |SBS| variations (mean over models of each model's |SBS|): {lead}.")
    out.append(
        f"{n80} of {len(par)} variations account for {pareto_share:.0%} of the total "
        f"|SBS|{paper_pareto(reference, pareto_share)}."
    )
    sc = scenario_frame(tables["sbs_by_scenario"], scenarios)
    hi = sc.loc[sc["sbs"].abs().idxmax()]
    lo = sc.loc[sc["sbs"].abs().idxmin()]
    out.append(
        f"Strongest scenario (largest |SBS|, pooled over models): {hi['label']} "
        f"({_interval(hi, ci)}); weakest (smallest |SBS|): {lo['label']} ({_interval(lo, ci)})."
    )
    cats = sc.groupby("category")["abs_sbs"].mean().sort_values(ascending=False)
    out.append(
        "Scenario categories by mean |SBS| (the mean over a category's scenarios of each "
        "scenario's |SBS|; Fig. 5 shows the other aggregation, |mean SBS|: the absolute value "
        "of a model's mean SBS over the category): "
        + ", ".join(f"{c} {v:.3f}" for c, v in cats.items())
        + "."
    )
    out += _vs_ranking(tables["vs_by_model"], alpha)
    pme = per_model(tables["per_model_effects"])
    if len(pme) > 1:
        s = pme.sort_values("sbs", ascending=False)
        out.append(
            "Models by overall SBS: "
            + ", ".join(
                f"{r['model']} {r['sbs']:+.4f} ({ci:.0%} CI [{r['ci_low']:+.4f}, "
                f"{r['ci_high']:+.4f}], corrected p {_p_text(float(r['pval_corr']))})"
                for _, r in s.iterrows()
            )
            + "."
        )
    wide = scenario_by_model(tables["sbs_by_scenario"], scenarios)
    models = [c for c in wide.columns if c != "category"]
    pair = chosen_pair(models)
    if pair:
        fit = pair_stats(tables.get("model_pair_regressions"), wide, *pair)
        flips = int(((wide[pair[0]] * wide[pair[1]]) < 0).sum())
        p = f", p {_p_text(fit['pval'])}" if "pval" in fit else ""
        out.append(
            f"{pair[1]} on {pair[0]} per-scenario mean Δ: slope {fit['slope']:.2f}, "
            f"r {fit['r']:.2f}{p}; {flips} scenario(s) change sign."
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


#: the most words a headline bullet may have (read in a minute; the detail below)
MAX_WORDS = 30


def _pp(v: float) -> str:
    """A shift in choice probability as signed percentage points: ``+3.2 pp``."""
    return f"{v * 100:+.1f} pp".replace("-", "\u2212")


def _pp_ci(row: pd.Series, ci: float) -> str:
    """``95% CI −11.0 to −10.0`` of a row with ``ci_low`` / ``ci_high`` (empty without)."""
    lo, hi = row.get("ci_low"), row.get("ci_high")
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return ""
    return f"{ci:.0%} CI {_pp(float(lo))} to {_pp(float(hi))}"


def _pole(label: str, v: float) -> str:
    """The pole a shift moves toward: the first of ``A vs. B`` when positive, else the second."""
    a, _, b = str(label).partition(" vs. ")
    return (a if v >= 0 else b or f"not {a}").strip()


def short_findings(
    tables: dict[str, pd.DataFrame],
    scenarios: pd.DataFrame | None,
    pareto_share: float,
    reference: pd.DataFrame | None = None,
    alpha: float = AnalysisSettings.alpha,
    ci: float = AnalysisSettings.ci,
) -> list[str]:
    """The headline: one bullet per finding, at most :data:`MAX_WORDS` words, each with its
    unit (pp: percentage points of the choice probability; VS on the same 0-1 scale), its
    direction and what it is compared with. :func:`findings` has the detail."""
    out: list[str] = []
    par, n80 = pareto_frame(tables["pareto"], pareto_share)
    var = tables.get("sbs_by_variation_model")
    if len(par):
        top = par.iloc[0]
        row = _pooled_row(var, category=top["category"], variation=top["label"])
        if row is not None:
            v = float(row["sbs"])
            direction = "toward the positive pole" if v >= 0 else "toward the negative pole"
            out.append(
                f"{top['label']} shifts choices most: {_pp(v)} {direction} "
                f"({_pp_ci(row, ci)}), the largest of {len(par)} variations, pooled over models."
            )
    out.append(
        f"{n80} of {len(par)} variations carry {pareto_share:.0%} of the total |SBS|"
        f"{paper_pareto(reference, pareto_share)}."
    )
    sc = scenario_frame(tables["sbs_by_scenario"], scenarios)
    if len(sc):
        hi = sc.loc[sc["sbs"].abs().idxmax()]
        lo = sc.loc[sc["sbs"].abs().idxmin()]
        p = hi.get("pval_corr")
        sig = f", corrected p {_p_text(float(p))}" if p is not None and pd.notna(p) else ""
        out.append(
            f"Strongest scenario: {hi['label']}, {_pp(float(hi['sbs']))} toward "
            f"{_pole(hi['label'], float(hi['sbs']))} ({_pp_ci(hi, ci)}{sig}); weakest: "
            f"{lo['label']}, {_pp(float(lo['sbs']))}."
        )
    vs = tables.get("vs_by_model")
    if vs is not None and len(vs):
        debiased = "vs_debiased" in vs.columns and vs["vs_debiased"].notna().any()
        eff = "vs_debiased" if debiased else "vs"
        vs = vs.assign(dimension=vs["dimension"].replace(DIMENSION_ALIASES))
        dims = pooled(vs, ["dimension"], "vs_by_model.csv").groupby("dimension")[eff].mean()
        dims = dims.sort_values(ascending=False)
        sig = _significant(vs, alpha)
        k = sig.groupby("dimension")["sig"].sum()
        n = sig["model"].nunique()
        label = "de-biased VS" if eff == "vs_debiased" else "VS"

        def of(d: str) -> str:
            return f", significant in {int(k.get(d, 0))}/{n} models" if n else ""

        out.append(
            f"Of the demographics, {dims.index[0]} moves judgments most ({label} "
            f"{dims.iloc[0]:.3f}{of(dims.index[0])}); {dims.index[-1]} least "
            f"({dims.iloc[-1]:.3f}{of(dims.index[-1])})."
        )
    pme = per_model(tables["per_model_effects"])
    if len(pme) > 1:
        s = pme.sort_values("sbs", ascending=False)
        a, b = s.iloc[0], s.iloc[-1]
        out.append(
            f"{a['model']} shifts most overall: SBS {_pp(float(a['sbs']))} ({_pp_ci(a, ci)}), "
            f"against {_pp(float(b['sbs']))} for {b['model']}, the least of {len(s)} models."
        )
    wide = scenario_by_model(tables["sbs_by_scenario"], scenarios)
    pair = chosen_pair([c for c in wide.columns if c != "category"])
    if pair:
        fit = pair_stats(tables.get("model_pair_regressions"), wide, *pair)
        flips = int(((wide[pair[0]] * wide[pair[1]]) < 0).sum())
        out.append(
            f"{pair[1]} vs {pair[0]} per scenario: slope {fit['slope']:.2f}, r {fit['r']:.2f} "
            f"(1 = same shifts); {flips} of {len(wide)} scenarios change sign."
        )
    return out
