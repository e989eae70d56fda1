"""The ``report`` stage: analysis tables -> figures, ``reports/README.md``, MLflow runs.

Outputs are replaced atomically: ``reports/figures/`` and ``reports/plots/`` are built in hidden
temp siblings (``reports/.figures.tmp``) and swapped in when complete
(:func:`stylisticbias.outputs.atomic_dir`), ``README.md`` last via a temp file, so a failed or
killed run leaves the previous report whole (never a deleted figure or a half-written PNG).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.config import ROOT, project_root
from stylisticbias.family import family_of
from stylisticbias.report import figures as F
from stylisticbias.report.inputs import ReportInputs
from stylisticbias.report.leaderboard import leaderboard_models, write_leaderboard
from stylisticbias.report.markdown import FigureRecord
from stylisticbias.report.offline_plots import PLOTS_DIR, TEMPLATE_NAME
from stylisticbias.report.plots_data import (
    category_by_model,
    chosen_pair,
    pair_fit,
    pair_stats,
    pareto_frame,
    scenario_by_model,
    scenario_frame,
    variance_frame,
)
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

#: the ``caveat`` of the plot data (``reports/plots/*.csv``) from simulated judges: what
#: ``dvc plots show`` writes across each plot (the PNG figures' ``SIMULATED`` watermark)
PLOT_CAVEAT = "SIMULATED judges"

#: The diagnostic tables: the registry column plotted, its axis label, the no-bias reference
#: line and the caption.
DIAGNOSTICS: dict[str, tuple[str, str, float | None, str]] = {
    "position_bias": (
        "share",
        "Share of valid answers naming the first-listed option",
        0.5,
        "Position bias per model: share of answers that pick the option written "
        "first, over all orderings (0.5 = no position preference).",
    ),
    "letter_bias": (
        "share",
        "Share of valid answers that are (a)",
        0.5,
        "Letter bias per model: share of answers that are (a), over all orderings "
        "(0.5 = no letter preference).",
    ),
    "invalid_rates": (
        "invalid_rate",
        "Share of responses that are invalid",
        None,
        "Invalid (unparseable) response rate per model; invalid answers are excluded from φ.",
    ),
}


def scenarios_frame(benchmark: Benchmark) -> pd.DataFrame:
    """The protocol's scenarios: scenario_id, category, positive, negative."""
    rows = [s.__dict__ for s in benchmark.scenarios]
    return pd.DataFrame(rows).rename(columns={"id": "scenario_id"})[
        ["scenario_id", "category", "positive", "negative"]
    ]


def render_figures(
    inputs: ReportInputs,
    scen: pd.DataFrame,
    out: Path,
    share: float,
    plots: Path | None = None,
) -> list[FigureRecord]:
    """Draw every figure the tables allow into ``out`` and the plot-ready CSVs into ``plots``
    (default ``out/../plots``); returns the figures with captions."""
    sim = inputs.settings.simulated
    t = inputs.tables
    for old in out.glob("*.png"):
        old.unlink()
    recs: list[FigureRecord] = []

    def add(name: str, fig: Any, caption: str, scope: str) -> None:
        recs.append(FigureRecord(name, F.save(fig, out / f"{name}.png"), caption, scope))

    par, n80 = pareto_frame(t["pareto"], share)
    add(
        "fig2_cumulative_abs_sbs",
        F.fig_pareto(par, n80, share, sim),
        f"Fig. 2. Cumulative |SBS| across the {len(par)} evaluated variations, averaged across "
        f"models and sorted by magnitude; {n80} variations reach {share:.0%} of the total.",
        "pooled",
    )
    sc = scenario_frame(t["sbs_by_scenario"], scen)
    add(
        "fig3_sbs_by_scenario",
        F.fig_scenarios(sc, sim, inputs.analysis.ci),
        f"Fig. 3. SBS across all {len(sc)} scenarios (pooled over models), sorted ascending, "
        f"coloured by scenario category; whiskers are {inputs.analysis.ci:.0%} bootstrap CIs "
        "where available.",
        "pooled",
    )
    add(
        "fig4_scenario_sensitivity",
        F.fig_sensitivity(sc, sim),
        "Fig. 4. Scenario sensitivity: SBS pooled over models (direction, x) against the mean "
        "over models of each model's |SBS| (magnitude, y); each point is one scenario.",
        "pooled",
    )
    w5 = category_by_model(
        t["sbs_by_scenario_category_model"], "sbs_by_scenario_category_model", absolute=True
    )
    add(
        "fig5_abs_sbs_by_scenario_category_model",
        F.fig_grouped_bars(
            w5,
            "Fig. 5 - |mean SBS| by scenario category and model",
            "|mean SBS| of the scenario category",
            sim,
        ),
        "Fig. 5. |mean SBS| by scenario category and model: the absolute value of each model's "
        "mean SBS over the category's variation x scenario cells (the headline's mean |SBS| "
        "per category instead averages each scenario's |SBS|).",
        "comparison",
    )
    w6 = category_by_model(t["sbs_by_category_model"], "sbs_by_category_model")
    add(
        "fig6_attribute_profiles",
        F.fig_heatmap(w6, "Fig. 6 - Attribute-category SBS profiles across models", sim),
        "Fig. 6. Attribute SBS profiles across models (rows sorted by mean SBS).",
        "comparison",
    )
    wide = scenario_by_model(t["sbs_by_scenario"], scen)
    models = [c for c in wide.columns if c != "category"]
    cross = inputs.table("cross_model_variance")
    if cross is not None and len(models) >= 2:
        vf = variance_frame(cross, scen)
        add(
            "fig7_cross_model_variance",
            F.fig_variance(vf, sim),
            "Fig. 7. Cross-model variance of per-scenario SBS, sorted; black edges mark the top "
            f"quartile ({int(vf['top_quartile'].sum())} of {len(vf)} scenarios).",
            "comparison",
        )
    pair = chosen_pair(models)
    if pair:
        fit = pair_stats(inputs.table("model_pair_regressions"), wide, *pair)
        drawn = pair_fit(wide[pair[0]], wide[pair[1]])  # the line through the points shown
        test = (
            f"; the table's slope {fit['slope']:.2f} (p = {fit['pval']:.3f}) is cross-fitted on "
            "face halves, as both models judge the same photos"
            if abs(fit["slope"] - drawn["slope"]) > 1e-9 and np.isfinite(fit.get("pval", np.nan))
            else ""
        )
        add(
            "fig8_model_pair",
            F.fig_pair(wide, *pair, drawn, sim),
            f"Fig. 8. {pair[0]} vs. {pair[1]} mean Δ per scenario, coloured by judgment "
            f"category; OLS of the points slope {drawn['slope']:.2f}, r = {drawn['r']:.2f}"
            f"{test}.",
            "comparison",
        )
        if len(models) > 2:
            add(
                "fig8_model_pairs_all",
                F.fig_pairs_grid(wide, models, sim),
                "Fig. 8 (all pairs). Per-scenario mean Δ for every pair of models.",
                "comparison",
            )
    for name, (col, ylabel, ref, caption) in DIAGNOSTICS.items():
        df = inputs.table(name)
        if df is None:
            continue
        if "scenario_id" in df.columns and (df["scenario_id"] == 0).any():
            df = df[df["scenario_id"] == 0]  # scenario_id 0 = all scenarios together
        per = df.groupby("model", sort=False)[col].mean()
        fig = F.fig_model_bars(per, caption.split(":")[0], ylabel, sim, ref)
        add(f"diag_{name}", fig, caption, "diagnostic")
    plot_frames = {
        "pareto": par.assign(rank=range(1, len(par) + 1)).rename(columns={"label": "variation"}),
        "sbs_by_scenario": sc.rename(columns={"label": "scenario"}),
    }
    if cross is not None and len(models) >= 2:
        plot_frames["cross_model_variance"] = vf.rename(columns={"label": "scenario"})
    write_plot_data(plot_frames, plots or out.parent / "plots", sim)
    log.info("drew %d figures", len(recs))
    return recs


def write_plot_data(frames: dict[str, pd.DataFrame], out: Path, simulated: bool = False) -> None:
    """The plot-ready CSVs behind the DVC ``plots:`` entries (one row per bar or point).

    From simulated judges, every row carries :data:`PLOT_CAVEAT` in a ``caveat`` column, which
    the plots' templates (``.dvc/plots/marked_*.json``) draw across the plot as a watermark; a
    real model's data has no such column and its plots no mark.
    """
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.csv"):
        old.unlink()
    for name, df in frames.items():
        if simulated:
            df = df.assign(caveat=PLOT_CAVEAT)
        df.to_csv(out / f"{name}.csv", index=False, float_format="%.6g")


def write_report_leaderboard(inputs: ReportInputs, reports: Path) -> Path:
    """``reports/leaderboard/index.html`` from the loaded tables (models in report order)."""
    models = inputs.settings.models
    rows = leaderboard_models(
        inputs.tables,
        [m.label for m in models],
        {m.label: m.simulated for m in models},
        inputs.analysis.alpha,
        inputs.analysis.ci,
    )
    pooled = reports / "plots" / "sbs_by_scenario.csv"
    scen = pd.read_csv(pooled) if pooled.exists() else None
    s = inputs.settings
    note = (
        f"{s.n_faces} faces, {s.n_images} images, {s.n_scenarios} scenarios, "
        f"generator {s.generator}, engine {s.engine} ({s.decoding})."
    )
    # the vendored vega builds (.dvc/plots/offline.html): the project's, else this checkout's
    # (a scratch project with its own conf/ but no .dvc/)
    here = project_root()
    builds_root = here if (here / PLOTS_DIR / TEMPLATE_NAME).is_file() else ROOT
    out = reports / "leaderboard" / "index.html"
    return write_leaderboard(rows, out, builds_root, scen, note)


def build_report(config: Config, root: Path | None = None) -> None:
    """Read the analysis outputs, write figures + ``reports/README.md``.

    MLflow logging is the next stage's job (:mod:`stylisticbias.report.track`).
    """
    root = root or project_root()
    benchmark = load_benchmark(config.protocol)  # the protocol, resolved once for the stage
    family_of(benchmark).hook("report")(config, benchmark, root)  # its family's report
