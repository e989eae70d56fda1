"""Figures of the report (paper Figs. 2-8 plus diagnostics), drawn with matplotlib (Agg).

Each ``fig_*`` function takes the shaped data from :mod:`stylisticbias.report.plots_data` and
returns a :class:`matplotlib.figure.Figure`; :func:`save` writes it as PNG. Simulated data gets a
diagonal ``SIMULATED`` watermark and a subtitle, so no figure can be mistaken for a real model.
"""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.report.plots_data import pair_fit

#: Fixed colours for the paper's four scenario categories (others cycle through tab10).
CATEGORY_COLORS: dict[str, str] = {
    "Personality & Social": "#4C72B0",
    "Interpersonal": "#55A868",
    "Behavioral": "#C44E52",
    "Socioeconomic & Appearance": "#DD8452",
}
SIM_NOTE = "SIMULATED judge (planted effects) - not a real model's behaviour"


def category_colors(categories: list[str]) -> dict[str, str]:
    """A colour per category: the fixed palette first, then tab10."""
    extra = iter(plt.get_cmap("tab10").colors[4:])  # type: ignore[attr-defined]
    out = {}
    for c in dict.fromkeys(categories):
        out[c] = CATEGORY_COLORS.get(c) or matplotlib.colors.to_hex(next(extra, "#777777"))
    return out


def _wrap(text: str, width_in: float, size_pt: float) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``size_pt`` (bold sans:
    about 0.62 em per character)."""
    return textwrap.fill(text, max(16, int(width_in * 72 / (0.62 * size_pt))))


_SUPERSCRIPT = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


class _Scaled(matplotlib.ticker.Formatter):
    """Tick values times ``scale``, with as many decimals as the drawn ticks' step needs."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.decimals = 0

    def set_locs(self, locs: Any) -> None:  # called with the drawn ticks before formatting
        super().set_locs(locs)
        vals = np.asarray(locs, float) * self.scale
        self.decimals = next(
            (d for d in range(6) if np.allclose(np.round(vals, d), vals, rtol=0, atol=1e-6)), 6
        )  # the fewest decimals that print every tick exactly: 0.25, not 0.2

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x * self.scale + 0.0:.{self.decimals}f}".replace("-", "\u2212")


def readable_ticks(ax: plt.Axes, most_decimals: int = 3) -> None:
    """Tick labels of at most ``most_decimals`` decimals, chosen from the data's range: a numeric
    axis whose tick step would need more (Fig. 7's variances, ``0.00005``) shows its values
    times ``10^k`` and says so in its label (``... (x10⁻⁴)``)."""
    from matplotlib.ticker import ScalarFormatter

    for axis in (ax.xaxis, ax.yaxis):
        if not isinstance(axis.get_major_formatter(), ScalarFormatter):
            continue
        lo, hi = sorted(axis.get_view_interval())
        locs = [v for v in axis.get_majorticklocs() if lo <= v <= hi]
        if len(locs) < 2:
            continue
        step = float(np.min(np.diff(locs)))
        if step <= 0 or step >= 10.0**-most_decimals:
            continue
        e = int(np.floor(np.log10(max(abs(lo), abs(hi)))))
        axis.set_major_formatter(_Scaled(10.0**-e))
        axis.set_label_text(f"{axis.get_label_text()} (\u00d710{str(e).translate(_SUPERSCRIPT)})")


def _decorate(fig: Figure, title: str, simulated: bool, subtitle: str | None = None) -> None:
    for ax in fig.axes:
        readable_ticks(ax)
    title = _wrap(title, fig.get_figwidth() * 0.96, 13)
    fig.suptitle(title, fontsize=13, fontweight="bold")
    top = 0.95 - (title.count("\n") * 13 * 1.25 / 72) / fig.get_figheight()
    notes = [s for s in (subtitle, SIM_NOTE if simulated else None) if s]
    if notes:
        fig.text(
            0.5,
            0.005,
            " | ".join(notes),
            ha="center",
            va="bottom",
            fontsize=8,
            color="#B22222" if simulated else "#444444",
        )
    if simulated:
        fig.text(
            0.5,
            0.5,
            "SIMULATED",
            fontsize=60,
            color="#B22222",
            alpha=0.10,
            ha="center",
            va="center",
            rotation=30,
            fontweight="bold",
            zorder=0,
        )
    fig.tight_layout(rect=(0, 0.03, 1, top))


def save(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as PNG (150 dpi) and close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def _category_legend(ax: plt.Axes, colors: dict[str, str], **kw: object) -> None:
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    ax.legend(handles, list(colors), title="Scenario category", fontsize=8, **kw)


def fig_pareto(df: pd.DataFrame, n_reach: int, share: float, simulated: bool) -> Figure:
    """Fig. 2: |SBS| per variation (bars, sorted) and its cumulative share (line), 80% line."""
    fig, ax = plt.subplots(figsize=(11, 5))
    x = np.arange(1, len(df) + 1)
    ax.bar(x, df["abs_sbs"], color="#8DA0CB", label="|SBS| of the variation")
    ax.set_xticks(x, df["label"], rotation=75, ha="right", fontsize=7)
    ax.set_xlabel("Variation (sorted by |SBS|)")
    ax.set_ylabel("|SBS| (mean over models)")
    ax2 = ax.twinx()
    ax2.plot(x, df["cum_share"] * 100, color="#1F3A93", marker="o", ms=3, label="cumulative share")
    ax2.axhline(share * 100, color="#B22222", ls="--", lw=1)
    if n_reach:
        ax2.axvline(n_reach, color="#B22222", ls=":", lw=1)
        ax2.annotate(
            f"{share:.0%} of total |SBS| reached by {n_reach} of {len(df)} variations",
            xy=(n_reach, share * 100),
            xytext=(min(n_reach + 1, len(df)), share * 100 - 18),
            fontsize=9,
            color="#B22222",
            arrowprops={"arrowstyle": "->", "color": "#B22222"},
        )
    ax2.set_ylim(0, 105)
    ax2.set_ylabel("Cumulative share of total |SBS| (%)")
    _decorate(fig, "Fig. 2 - Cumulative |SBS| across visual attributes", simulated)
    return fig


def fig_scenarios(df: pd.DataFrame, simulated: bool, ci: float = AnalysisSettings.ci) -> Figure:
    """Fig. 3: SBS per scenario in ``df`` order (ascending: largest on top), by category;
    whiskers are the ``ci`` (``analysis.bootstrap.ci``) bootstrap intervals."""
    colors = category_colors(list(df["category"]))
    fig, ax = plt.subplots(figsize=(9, max(5, 0.3 * len(df) + 1.5)))
    y = np.arange(len(df))
    err = None
    if {"ci_low", "ci_high"} <= set(df.columns):
        err = np.vstack([df["sbs"] - df["ci_low"], df["ci_high"] - df["sbs"]]).clip(min=0)
    ax.barh(
        y,
        df["sbs"],
        xerr=err,
        color=[colors[c] for c in df["category"]],
        error_kw={"lw": 0.8, "capsize": 2, "ecolor": "#333333"},
    )
    ax.set_yticks(y, df["label"], fontsize=8)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel(f"SBS (mean Delta, positive pole) - {ci:.0%} CI" if err is not None else "SBS")
    _category_legend(ax, colors, loc="lower right")
    _decorate(fig, f"Fig. 3 - SBS across all {len(df)} scenarios (largest on top)", simulated)
    return fig


def fig_sensitivity(df: pd.DataFrame, simulated: bool) -> Figure:
    """Fig. 4: scenario sensitivity, x = SBS (direction), y = |SBS| (magnitude), labelled."""
    colors = category_colors(list(df["category"]))
    fig, ax = plt.subplots(figsize=(10, 6.5))
    for cat, g in df.groupby("category", sort=False):
        ax.scatter(g["sbs"], g["abs_sbs"], s=45, color=colors[cat], label=cat, edgecolor="white")
    labels = [
        ax.annotate(
            str(r["label"]).split(" vs. ")[0],
            (r["sbs"], r["abs_sbs"]),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
        for _, r in df.iterrows()
    ]
    ax.axvline(0, color="grey", lw=0.7, ls="--")
    ax.set_xlabel("SBS (direction: > 0 favourable pole)")
    ax.set_ylabel("|SBS| (magnitude)")
    ax.legend(title="Scenario category", fontsize=8)
    _decorate(
        fig,
        "Fig. 4 - Scenario sensitivity: direction vs magnitude",
        simulated,
        "each point is one scenario (label = positive pole)",
    )
    declutter(labels)
    return fig


#: where a point's label may go, tried in order: (dx, dy) unit offsets and the text's alignment
_SPOTS: tuple[tuple[float, float, str, str], ...] = (
    (1, 1, "left", "bottom"),
    (1, -1, "left", "top"),
    (-1, 1, "right", "bottom"),
    (-1, -1, "right", "top"),
    (1.4, 0, "left", "center"),
    (-1.4, 0, "right", "center"),
    (0, 1.4, "center", "bottom"),
    (0, -1.4, "center", "top"),
)


def _markers(ax: Any) -> list[tuple[float, float, float]]:
    """(x, y, radius) in display pixels of every scatter marker drawn on ``ax``."""
    from matplotlib.collections import PathCollection

    out = []
    for c in ax.collections:
        if not isinstance(c, PathCollection) or not len(c.get_offsets()):
            continue
        sizes = c.get_sizes() if len(c.get_sizes()) else np.array([36.0])
        xy = c.get_offset_transform().transform(c.get_offsets())
        for (x, y), s in zip(xy, np.resize(sizes, len(xy))):
            out.append((float(x), float(y), float(np.sqrt(s) / 2 * ax.figure.dpi / 72)))
    return out


def _hits_circle(b: Any, x: float, y: float, r: float) -> bool:
    """Whether box ``b`` comes within ``r`` of ``(x, y)`` (1 px tolerance)."""
    dx = max(b.x0 - x, 0.0, x - b.x1)
    dy = max(b.y0 - y, 0.0, y - b.y1)
    return dx * dx + dy * dy < (r - 1.0) ** 2


def declutter(labels: list[Any], pad_px: float = 1.0) -> int:
    """Place point labels (annotations in offset points) where they overlap no other label, no
    other point's marker and stay inside the axes; the labels moved from where they were.

    A simple repel step: labels are placed one by one, most crowded first; each takes the
    first free spot of :data:`_SPOTS` around its point, then the same spots farther out (with
    a thin leader line to the point), else the spot that collides least.
    """
    if not labels:
        return 0
    from matplotlib.text import Text

    fig = labels[0].figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    to_pt = 72.0 / fig.dpi

    def box(t: Any) -> Any:  # the text alone (an Annotation's extent includes its arrow)
        return Text.get_window_extent(t, renderer).padded(pad_px)

    def anchor(t: Any) -> tuple[float, float]:
        return tuple(t.axes.transData.transform(t.xy))  # type: ignore[return-value]

    markers = {id(ax): _markers(ax) for ax in {t.axes for t in labels}}
    pts = [anchor(t) for t in labels]
    crowd = [sum(np.hypot(px - qx, py - qy) < 60 for qx, qy in pts) for px, py in pts]
    order = sorted(range(len(labels)), key=lambda i: (-crowd[i], pts[i][0], pts[i][1]))
    legends = [ax.get_legend() for ax in {t.axes for t in labels}]
    placed: list[Any] = [g.get_window_extent(renderer) for g in legends if g is not None]
    moves = 0
    for i in order:
        t = labels[i]
        ax_box = t.axes.get_window_extent(renderer)
        x0, y0 = pts[i]
        own = [m for m in markers[id(t.axes)] if np.hypot(m[0] - x0, m[1] - y0) < 0.5]
        r_pt = (max((m[2] for m in own), default=3.0) * to_pt) + 1.0
        others = [m for m in markers[id(t.axes)] if np.hypot(m[0] - x0, m[1] - y0) >= 0.5]
        before = (t.xyann, t.get_ha(), t.get_va())
        best: tuple[float, tuple] | None = None
        for ring in (1.0, 2.2, 3.6, 5.2, 7.0):
            for dx, dy, ha, va in _SPOTS:
                t.set_ha(ha)
                t.set_va(va)
                t.xyann = (dx * r_pt * ring, dy * r_pt * ring)
                b = box(t)
                cost = sum(b.overlaps(p) for p in placed) * 10.0
                cost += sum(_hits_circle(b, mx, my, mr) for mx, my, mr in others) * 3.0
                out = (
                    max(ax_box.x0 - b.x0, 0)
                    + max(b.x1 - ax_box.x1, 0)
                    + max(ax_box.y0 - b.y0, 0)
                    + max(b.y1 - ax_box.y1, 0)
                )
                cost += 20.0 * (out > 0) + out / 100.0
                if best is None or cost < best[0]:
                    best = (cost, (t.xyann, ha, va))
                if cost == 0:
                    break
            if best is not None and best[0] == 0:
                break
        assert best is not None
        t.xyann, ha, va = best[1]
        t.set_ha(ha)
        t.set_va(va)
        moves += (t.xyann, ha, va) != before
        placed.append(box(t))
    for t in labels:
        if np.hypot(*t.xyann) > 2.5 * 6.0:  # far from its point: a thin leader line to it
            ax = t.axes
            t.remove()
            ax.annotate(
                t.get_text(),
                t.xy,
                xytext=t.xyann,
                textcoords="offset points",
                fontsize=t.get_fontsize(),
                ha=t.get_ha(),
                va=t.get_va(),
                arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "#888888", "shrinkA": 0},
            )
    return moves


def fig_grouped_bars(
    wide: pd.DataFrame, title: str, ylabel: str, simulated: bool, legend_title: str = "Model"
) -> Figure:
    """Grouped bars: one group per row of ``wide``, one bar per column (model)."""
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(wide) + 3), 5))
    n = max(len(wide.columns), 1)
    width = 0.8 / n
    x = np.arange(len(wide))
    cmap = plt.get_cmap("tab10")
    for i, m in enumerate(wide.columns):
        ax.bar(
            x + (i - (n - 1) / 2) * width,
            wide[m].to_numpy(float),
            width,
            label=str(m),
            color=cmap(i % 10),
        )
    ax.set_xticks(x, [str(i) for i in wide.index], rotation=20, ha="right", fontsize=9)
    ax.set_ylabel(ylabel)
    ax.axhline(0, color="black", lw=0.7)
    ax.legend(title=legend_title, fontsize=8)
    _decorate(fig, title, simulated)
    return fig


def fig_heatmap(wide: pd.DataFrame, title: str, simulated: bool) -> Figure:
    """Fig. 6: attribute-category SBS per model as a diverging heatmap with values."""
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(wide.columns) + 4), 0.45 * len(wide) + 2))
    vals = wide.to_numpy(float)
    lim = float(np.nanmax(np.abs(vals))) if np.isfinite(vals).any() else 1.0
    im = ax.imshow(vals, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(len(wide.columns)), [str(c) for c in wide.columns], rotation=20, ha="right")
    ax.set_yticks(range(len(wide.index)), [str(i) for i in wide.index])
    for (i, j), v in np.ndenumerate(vals):
        if np.isfinite(v):
            ax.text(
                j,
                i,
                f"{v:+.3f}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if abs(v) > 0.6 * lim else "black",
            )
    fig.colorbar(im, ax=ax, label="SBS (mean Delta)")
    ax.set_xlabel("Model")
    ax.set_ylabel("Attribute category (sorted by mean SBS)")
    _decorate(fig, title, simulated)
    return fig


def fig_variance(df: pd.DataFrame, simulated: bool) -> Figure:
    """Fig. 7: cross-model variance of SBS per scenario, sorted, top quartile highlighted."""
    colors = category_colors(list(df["category"]))
    fig, ax = plt.subplots(figsize=(9, max(5, 0.3 * len(df) + 1.5)))
    d = df.iloc[::-1]
    y = np.arange(len(d))
    ax.barh(
        y,
        d["variance"],
        color=[colors[c] for c in d["category"]],
        edgecolor=["black" if t else "none" for t in d["top_quartile"]],
    )
    ax.set_yticks(y, d["label"], fontsize=8)
    ax.set_xlabel("Variance of per-scenario SBS across models (black edge = top quartile)")
    _category_legend(ax, colors, loc="lower right")
    _decorate(fig, "Fig. 7 - Cross-model disagreement per scenario", simulated)
    return fig


def _pair_axes(
    ax: plt.Axes,
    wide: pd.DataFrame,
    mx: str,
    my: str,
    fit: dict[str, float],
    colors: dict[str, str],
    labels: bool,
) -> list[Any]:
    """Draw one model pair on ``ax``; the point labels drawn (none unless ``labels``)."""
    for cat, g in wide.groupby("category", sort=False):
        ax.scatter(
            g[mx],
            g[my],
            s=30 if labels else 14,
            color=colors[cat],
            edgecolor="white",
            label=str(cat),
        )
    vals = pd.concat([wide[mx], wide[my]]).dropna()
    lo, hi = (float(vals.min()), float(vals.max())) if len(vals) else (-0.1, 0.1)
    pad = 0.05 * (hi - lo or 1)
    xs = np.linspace(lo - pad, hi + pad, 10)
    ax.plot(xs, xs, color="grey", ls=":", lw=0.8, label="y = x")
    if np.isfinite(fit.get("slope", np.nan)):
        ax.plot(
            xs,
            fit["intercept"] + fit["slope"] * xs,
            color="black",
            lw=1.2,
            label=f"OLS: slope = {fit['slope']:.2f}, r = {fit['r']:.2f}",
        )
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xlabel(f"{mx}: mean Delta per scenario")
    ax.set_ylabel(f"{my}: mean Delta per scenario")
    if not labels:
        return []
    return [
        ax.annotate(
            str(lab).split(" vs. ")[0],
            (r[mx], r[my]),
            fontsize=6.5,
            xytext=(2, 2),
            textcoords="offset points",
        )
        for lab, r in wide.iterrows()
    ]


def fig_pair(
    wide: pd.DataFrame, mx: str, my: str, fit: dict[str, float], simulated: bool
) -> Figure:
    """Fig. 8: model-pair scatter of per-scenario mean Delta with the regression line."""
    colors = category_colors(list(wide["category"]))
    fig, ax = plt.subplots(figsize=(8, 7))
    labels = _pair_axes(ax, wide, mx, my, fit, colors, labels=True)
    ax.legend(fontsize=8, loc="upper left")
    _decorate(
        fig,
        f"Fig. 8 - {mx} vs {my}: mean Delta per scenario",
        simulated,
        "coloured by judgment category",
    )
    declutter(labels)
    return fig


def fig_pairs_grid(wide: pd.DataFrame, models: list[str], simulated: bool) -> Figure:
    """Small multiples of Fig. 8 for every model pair."""
    pairs = list(itertools.combinations(models, 2))
    ncol = min(3, len(pairs))
    nrow = int(np.ceil(len(pairs) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 4 * nrow), squeeze=False)
    colors = category_colors(list(wide["category"]))
    for ax, (mx, my) in zip(axes.flat, pairs):
        fit = pair_fit(wide[mx], wide[my])
        _pair_axes(ax, wide, mx, my, fit, colors, labels=False)
        head = _wrap(f"{my} ~ {mx}", 4.0, 9)
        ax.set_title(f"{head}\nslope {fit['slope']:.2f}, r {fit['r']:.2f}", fontsize=9)
        ax.xaxis.label.set_size(8)
        ax.yaxis.label.set_size(8)
    for ax in axes.flat[len(pairs) :]:
        ax.axis("off")
    _category_legend(axes.flat[0], colors, loc="upper left")
    _decorate(fig, "Fig. 8 (all pairs) - per-scenario mean Delta, model vs model", simulated)
    return fig


def fig_model_bars(
    values: pd.Series, title: str, ylabel: str, simulated: bool, reference: float | None = None
) -> Figure:
    """One bar per model (diagnostics: position/letter bias, invalid rate), sorted."""
    values = values.sort_values(ascending=False)
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(values) + 3), 4.5))
    ax.bar([str(m) for m in values.index], values.to_numpy(float), color="#8DA0CB")
    for i, v in enumerate(values.to_numpy(float)):
        ax.text(i, v, f"{v:.3f}", ha="center", va="bottom", fontsize=8)
    if reference is not None:
        ax.axhline(reference, color="#B22222", ls="--", lw=1, label=f"no bias ({reference})")
        ax.legend(fontsize=8)
    ax.set_xlabel("Model")
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="x", rotation=20)
    _decorate(fig, title, simulated)
    return fig
