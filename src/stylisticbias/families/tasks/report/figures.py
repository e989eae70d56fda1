"""The figures of a task protocol's report, drawn from the analyze stage's task tables.

* REFLECT: the win-rate heatmap (``reflect_win_matrix``: row group vs column group, the share
  of retained pairs the row wins; one panel per model and scenario) and the MCQ option
  distributions (``reflect_mcq_distribution``: stacked shares per group, pooled last);
* VIGNETTE: the log-odds heat map (``vignette_log_odds``: identity x activity term, the
  add-one log-odds ratio, ``*`` where the Fisher p survives Benjamini-Hochberg; the Woolf
  intervals are in the table), as the paper draws it: a forest plot of hundreds of rows is
  unreadable at screen size.

Each figure is labelled *simulated* when its rows come from a simulated judge.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Callable
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from statsmodels.stats.multitest import multipletests

from stylisticbias.registry import Registry
from stylisticbias.report.figures import save

log = logging.getLogger(__name__)

SIMULATED_NOTE = "simulated judge (planted effects): a pipeline check, not a finding"


def _note(fig: Figure, simulated: bool) -> None:
    if simulated:
        fig.text(0.01, 0.005, SIMULATED_NOTE, fontsize=7, color="0.35", ha="left", va="bottom")


def _grid(n: int, cols: int, width: float, height: float) -> tuple[Figure, np.ndarray]:
    """``n`` panels on ``cols`` columns (the unused ones hidden)."""
    cols = min(n, cols)
    rows = -(-n // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(width * cols, height * rows + 0.7), squeeze=False, layout="constrained"
    )
    fig.get_layout_engine().set(rect=(0, 0.03, 1, 0.97))  # room for the simulated note
    return fig, axes


def fig_win_matrix(matrix: pd.DataFrame) -> Figure:
    """REFLECT Sec. 3.1: one heatmap per (model, scenario) of the win-rate matrix."""
    panels = list(matrix.groupby(["model", "scenario_id"], sort=True))
    fig, axes = _grid(len(panels), 3, 4.6, 4.2)
    im = None
    for ax, ((model, sid), df) in zip(axes.flat, panels):
        groups = sorted(set(df["group"]) | set(df["opponent"]))
        m = df.pivot(index="group", columns="opponent", values="win_rate").reindex(
            index=groups, columns=groups
        )
        im = ax.imshow(m.to_numpy(float), vmin=0, vmax=1, cmap="RdBu_r")
        ax.set_xticks(range(len(groups)), groups, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(groups)), groups, fontsize=7)
        for i in range(len(groups)):
            for j in range(len(groups)):
                v = m.iat[i, j]
                if not np.isnan(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6)
        ax.set_title(f"{model}, task {sid}", fontsize=9)
        ax.set_xlabel("opponent", fontsize=8)
    if im is not None:
        fig.colorbar(
            im, ax=[a for a in axes.flat if a.get_visible()], shrink=0.8, label="row wins (share)"
        )
    fig.suptitle("REFLECT 2AFC win rates: row group vs column group", fontsize=10)
    _note(fig, bool(matrix["simulated"].any()))
    return fig


def fig_mcq_distributions(dist: pd.DataFrame) -> Figure:
    """REFLECT Sec. 3.2: option shares per group (stacked bars; pooled last), per model x task."""
    panels = list(dist.groupby(["model", "scenario_id"], sort=True))
    fig, axes = _grid(len(panels), 2, 6.2, 3.4)
    for ax, ((model, sid), df) in zip(axes.flat, panels):
        options = list(dict.fromkeys(df["option"]))
        groups = [g for g in dict.fromkeys(df["group"]) if g != "pooled"] + ["pooled"]
        shares = (
            df.pivot(index="group", columns="option", values="share")
            .reindex(index=groups, columns=options)
            .fillna(0.0)
        )
        left = np.zeros(len(groups))
        colors = plt.get_cmap("viridis")(np.linspace(0.1, 0.9, len(options)))
        for o, c in zip(options, colors):
            ax.barh(range(len(groups)), shares[o], left=left, color=c, label=o.upper())
            left += shares[o].to_numpy()
        ax.set_yticks(range(len(groups)), groups, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of valid answers", fontsize=8)
        ax.set_title(f"{model}, task {sid}", fontsize=9)
        ax.legend(
            ncol=len(options),
            fontsize=6,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.28),
            frameon=False,
        )
    fig.suptitle("REFLECT MCQ option distributions per group", fontsize=10)
    _note(fig, bool(dist["simulated"].any()))
    return fig


def fig_log_odds_heatmap(lo: pd.DataFrame, alpha: float = 0.05) -> Figure:
    """VIGNETTE Sec. 4.2, as the paper draws it: a heat map of the add-one log-odds, identity
    x activity term, one panel per model; ``*`` marks a cell whose Fisher p survives
    Benjamini-Hochberg over the model's cells. Identities are the rows, unless the terms are
    many (over 16) and outnumber them: then the terms are (the protocol's 60 terms as columns
    would make a figure a screen shows only shrunk past reading). Values are printed in the
    cells while the columns fit (up to 16)."""
    df = lo.reset_index(drop=True)
    df["sig"] = False
    for _, g in df.groupby("model"):
        df.loc[g.index, "sig"] = multipletests(g["pval"].fillna(1.0), alpha, "fdr_bh")[0]
    models = list(dict.fromkeys(df["model"]))
    identities = sorted(df["identity"].astype(str).unique())
    terms = sorted(df["activity"].astype(str).unique())
    transpose = len(terms) > 16 and len(terms) > len(identities)
    rows, cols = (terms, identities) if transpose else (identities, terms)
    cell = 0.42 if len(cols) <= 16 else 0.28
    width = max(4.0, cell * len(cols) + 2.6)
    height = max(3.0, (0.2 if transpose else 0.28) * len(rows) + 2.2)
    fig, axes = plt.subplots(
        1,
        len(models),
        figsize=(width * len(models) + 1.0, height),
        squeeze=False,
        layout="constrained",
    )
    fig.get_layout_engine().set(rect=(0, 0.03, 1, 0.97))
    vals = df["log_odds"].to_numpy(float)
    lim = float(np.nanmax(np.abs(vals))) if np.isfinite(vals).any() else 1.0
    im = None
    for ax, m in zip(axes.flat, models):
        g = df[df["model"] == m].assign(
            identity=lambda d: d["identity"].astype(str),
            activity=lambda d: d["activity"].astype(str),
        )
        grid = g.pivot_table(index="identity", columns="activity", values="log_odds")
        grid = grid.reindex(index=identities, columns=terms)
        sig = g.pivot_table(index="identity", columns="activity", values="sig", aggfunc="max")
        sig = sig.reindex(index=identities, columns=terms).fillna(False).astype(bool)
        if transpose:
            grid, sig = grid.T, sig.T
        im = ax.imshow(grid.to_numpy(float), cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        show_values = len(cols) <= 16
        for (i, j), v in np.ndenumerate(grid.to_numpy(float)):
            if not np.isfinite(v):
                continue
            mark = "*" if sig.iat[i, j] else ""
            text = f"{v:.1f}{mark}" if show_values else mark
            if text:
                color = "white" if abs(v) > 0.6 * lim else "black"
                ax.text(j, i, text, ha="center", va="center", fontsize=6, color=color)
        ax.set_xlabel("identity" if transpose else "activity term", fontsize=8)
        if transpose:
            ax.set_ylabel("activity term", fontsize=8)
        ax.set_title(m, fontsize=9)
    if im is not None:
        fig.colorbar(im, ax=list(axes.flat), shrink=0.8, label="add-one log-odds (natural log)")
    title = f"VIGNETTE add-one log-odds, identity x activity term (* BH-significant, q < {alpha:g})"
    fig.suptitle(textwrap.fill(title, int(fig.get_figwidth() * 72 / (0.6 * 10))), fontsize=10)
    _note(fig, bool(lo["simulated"].any()))
    return fig


#: figure file -> (the table it is drawn from, its builder)
TASK_FIGURES: Registry[tuple[str, Callable[[pd.DataFrame], Figure]]] = Registry(
    "task figure",
    {
        "reflect_win_matrix.png": ("reflect_win_matrix", fig_win_matrix),
        "reflect_mcq_distributions.png": ("reflect_mcq_distribution", fig_mcq_distributions),
        "vignette_log_odds_heatmap.png": ("vignette_log_odds", fig_log_odds_heatmap),
    },
)


def render_task_figures(tables: Path, out: Path) -> list[Path]:
    """Every figure whose table the analyze stage wrote (``tables/<name>.csv``) -> ``out``."""
    written = []
    for name, (table, build) in TASK_FIGURES.items():
        path = tables / f"{table}.csv"
        if not path.is_file():
            continue
        df = pd.read_csv(path)
        if df.empty:
            continue
        written.append(save(build(df), out / name))
        log.info("wrote %s", out / name)
    return written
