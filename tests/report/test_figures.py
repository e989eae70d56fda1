"""Figure helpers: Fig. 4's and Fig. 8's point labels overlap no other label and no other point
and stay inside their axes, tick labels carry at most three decimals, Fig. 3's title says its
order; every report figure passes the text checks (:func:`text_problems`)."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Text

from stylisticbias.report.figures import (
    declutter,
    fig_pair,
    fig_scenarios,
    fig_sensitivity,
    fig_variance,
)


def _scenarios(n: int = 25) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    sbs = np.sort(rng.normal(0, 0.02, n))  # clustered near 0: the labels collide
    return pd.DataFrame(
        {
            "label": [f"Scenario number {i} vs. other {i}" for i in range(n)],
            "category": [["Social", "Work", "Health"][i % 3] for i in range(n)],
            "sbs": sbs,
            "abs_sbs": np.abs(sbs),
            "ci_low": sbs - 0.01,
            "ci_high": sbs + 0.01,
        }
    )


def _label_boxes(fig):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    ax = fig.axes[0]
    return [Text.get_window_extent(t, r) for t in ax.texts if t.get_text().startswith("Scenario")]


def _crowded() -> pd.DataFrame:
    """Scenarios whose points crowd (three on one spot, pairs side by side) and whose largest
    sits at the right edge with a long label: where today's demo Figs. 4 and 8 went wrong."""
    df = _scenarios()
    df.loc[0:2, "sbs"] = [0.0150, 0.0151, 0.0152]
    df.loc[3:4, "sbs"] = [0.0050, 0.0056]
    df.loc[5, ["sbs", "label"]] = [0.045, "Attractive and very well dressed vs. other 5"]
    df["abs_sbs"] = df["sbs"].abs()
    df.loc[0:2, "abs_sbs"] = [0.0150, 0.0152, 0.0154]
    return df


def test_fig4_labels_do_not_overlap() -> None:
    fig = fig_sensitivity(_scenarios(), simulated=False)
    boxes = _label_boxes(fig)
    assert len(boxes) == 25
    overlaps = [(a, b) for a, b in itertools.combinations(boxes, 2) if a.overlaps(b)]
    assert not overlaps
    plt.close(fig)


def test_fig4_and_fig8_point_labels_overlap_nothing_and_stay_inside() -> None:
    df = _crowded()
    fig4 = fig_sensitivity(df, simulated=True)
    assert point_label_problems(fig4) == []
    wide = pd.DataFrame(
        {
            "m1": df["sbs"].to_numpy(),
            "m2": df["sbs"].to_numpy() * 0.5,
            "category": df["category"].to_numpy(),
        },
        index=df["label"],
    )
    fig8 = fig_pair(wide, "m1", "m2", {"slope": 0.5, "intercept": 0.0, "r": 1.0}, simulated=True)
    assert point_label_problems(fig8) == []
    plt.close("all")


def test_tick_labels_have_at_most_three_decimals() -> None:
    """Fig. 7's variances (~1e-4) printed as 0.00005, 0.00010, ...: now 0.5, 1.0 ... x10^-4."""
    df = _scenarios().assign(variance=np.linspace(1e-5, 1.6e-4, 25), top_quartile=False)
    fig = fig_variance(df, simulated=False)
    fig.canvas.draw()
    shown = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert shown and all(len(t.split(".")[1]) <= 3 for t in shown if "." in t), shown
    assert "\u00d710\u207b" in fig.axes[0].get_xlabel()
    plt.close(fig)


def test_declutter_separates_stacked_labels_and_reports_moves() -> None:
    fig, ax = plt.subplots()
    texts = [
        ax.annotate("same place", (0.5, 0.5), xytext=(3, 3), textcoords="offset points")
        for _ in range(4)
    ]
    assert declutter(texts) > 0
    boxes = _label_boxes_all(fig)
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
    plt.close(fig)


def _label_boxes_all(fig):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    return [Text.get_window_extent(t, r) for t in fig.axes[0].texts]


def test_fig3_title_names_its_order() -> None:
    fig = fig_scenarios(_scenarios(), simulated=False)
    title = fig.get_suptitle()
    assert "largest on top" in title and "ascending" not in title
    plt.close(fig)


def _drawn_texts(fig) -> list[Text]:
    """The texts a draw of ``fig`` shows: visible, non-empty, and for tick labels only those
    of ticks inside the axis' view interval (matplotlib keeps the others, undrawn)."""
    hidden: set[int] = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                loc = tick.get_loc()
                if loc is None or not (lo - 1e-9 * abs(hi - lo) <= loc <= hi + 1e-9 * abs(hi - lo)):
                    hidden |= {id(tick.label1), id(tick.label2)}
    return [
        t
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and id(t) not in hidden
    ]


def text_outside(fig, tol: float = 1.0) -> list[str]:
    """Every drawn text of ``fig`` whose box leaves the canvas (clipped in the PNG)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    w, h = fig.bbox.width, fig.bbox.height
    bad = []
    for t in _drawn_texts(fig):
        bb = t.get_window_extent(r)
        if bb.x0 < -tol or bb.y0 < -tol or bb.x1 > w + tol or bb.y1 > h + tol:
            box = f"({bb.x0:.0f},{bb.y0:.0f})-({bb.x1:.0f},{bb.y1:.0f})"
            bad.append(f"{t.get_text()[:40]!r} at {box} of {w:.0f}x{h:.0f}")
    return bad


def _corners(t: Text, r) -> np.ndarray:
    """The four corners of a (possibly rotated) text's box, in display pixels: the unrotated
    box's size turned by the rotation about the drawn box's centre."""
    bb = Text.get_window_extent(t, r)  # the text alone (an annotation's includes its arrow)
    angle = t.get_rotation()
    t.set_rotation(0)
    flat = Text.get_window_extent(t, r)
    t.set_rotation(angle)
    a = np.deg2rad(angle)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * [flat.width / 2, flat.height / 2]
    return half @ rot.T + [(bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2]


def _overlap(p: np.ndarray, q: np.ndarray, margin: float = 1.0) -> bool:
    """Separating-axis test of two convex quadrilaterals (overlap deeper than ``margin`` px)."""
    for poly in (p, q):
        for i in range(4):
            edge = poly[(i + 1) % 4] - poly[i]
            n = np.array([-edge[1], edge[0]]) / (np.hypot(*edge) or 1.0)
            a, b = p @ n, q @ n
            if a.max() - margin <= b.min() or b.max() - margin <= a.min():
                return False
    return True


def overlapping_labels(fig) -> list[str]:
    """Pairs of drawn tick labels of one axis, or of texts drawn on one axes (point labels,
    values), whose (rotated) boxes overlap: unreadable."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    drawn = {id(t) for t in _drawn_texts(fig)}
    bad = []
    for ax in fig.axes:
        groups = [ax.xaxis.get_ticklabels(), ax.yaxis.get_ticklabels(), ax.texts]
        for group in groups:
            labels = [t for t in group if id(t) in drawn]
            quads = [_corners(t, r) for t in labels]
            for (p, tp), (q, tq) in itertools.combinations(zip(quads, labels), 2):
                if _overlap(p, q):
                    bad.append(f"{tp.get_text()[:20]!r} / {tq.get_text()[:20]!r}")
    return bad


def point_label_problems(fig) -> list[str]:
    """Point labels (annotations placed in offset points) that overlap another, cover another
    point's marker or leave their axes."""
    from matplotlib.collections import PathCollection
    from matplotlib.text import Annotation

    bad = overlapping_labels(fig)
    r = fig.canvas.get_renderer()
    for ax in fig.axes:
        frame = ax.get_window_extent(r)
        marks = [
            (xy, np.sqrt(size) / 2 * fig.dpi / 72)
            for c in ax.collections
            if isinstance(c, PathCollection)
            for xy, size in zip(
                c.get_offset_transform().transform(c.get_offsets()),
                np.resize(c.get_sizes(), len(c.get_offsets())),
            )
        ]
        for t in ax.texts:
            if not (isinstance(t, Annotation) and t.anncoords == "offset points"):
                continue
            b = Text.get_window_extent(t, r)
            name = repr(t.get_text()[:20])
            if max(frame.x0 - b.x0, b.x1 - frame.x1, frame.y0 - b.y0, b.y1 - frame.y1) > 1:
                bad.append(f"{name} leaves its axes")
            own = ax.transData.transform(t.xy)
            for (x, y), rad in marks:
                if np.hypot(x - own[0], y - own[1]) < 0.5:
                    continue
                dx, dy = max(b.x0 - x, 0, x - b.x1), max(b.y0 - y, 0, y - b.y1)
                if np.hypot(dx, dy) < rad - 1:
                    bad.append(f"{name} covers the point at ({x:.0f}, {y:.0f})")
    return bad


def check_saves(module, monkeypatch) -> dict[str, list[str]]:
    """Replace ``module.save`` by one that records each figure's text problems by file name."""
    problems: dict[str, list[str]] = {}
    real_save = module.save

    def checked_save(fig, path):
        bad = text_outside(fig) + point_label_problems(fig)
        if bad:
            problems[path.name] = bad
        return real_save(fig, path)

    monkeypatch.setattr(module, "save", checked_save)
    return problems


def test_the_text_checks_catch_clipped_and_overlapping_text() -> None:
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    fig.tight_layout()
    assert text_outside(fig) == [] and overlapping_labels(fig) == []
    fig.text(-0.2, 0.5, "cut off at the left edge")
    ax.set_xticks([0.0, 0.01], ["a long tick label", "another long one"])
    assert len(text_outside(fig)) == 1 and len(overlapping_labels(fig)) == 1
    ax.set_xticks([0.0, 1.0], ["a long tick label", "another long one"], rotation=90)
    assert overlapping_labels(fig) == []  # turned: side by side, no overlap
    ax.scatter([0.5, 0.52, 0.99], [0.5, 0.5, 0.5])
    for x, text in ((0.5, "one label"), (0.52, "its neighbour"), (0.99, "past the edge")):
        ax.annotate(text, (x, 0.5), xytext=(2, 2), textcoords="offset points")
    problems = point_label_problems(fig)
    assert "'one label' / 'its neighbour'" in problems
    assert "'past the edge' leaves its axes" in problems
    assert any(p.startswith("'one label' covers the point") for p in problems), problems
    plt.close(fig)


# slow tier: renders every report figure (~12 CPU-s); fast sibling:
# test_task_protocol_figures_keep_their_text_inside_the_canvas
@pytest.mark.slow
def test_report_figures_keep_their_text_inside_the_canvas(
    tmp_path, analysis_output, monkeypatch
) -> None:
    """Every figure the report writes (three models: the all-pairs grid too): no title, label or
    note clipped at the canvas edge, no two tick labels on top of each other."""
    import shutil

    from stylisticbias.config import project_root
    from stylisticbias.report import figures as F
    from stylisticbias.report.run import build_report
    from stylisticbias.spec.parse import config_from_params

    params = analysis_output(["simulated-strong", "simulated-weak", "gemma-3"], simulated=True)
    params["tracking"]["enabled"] = False
    shutil.copytree(project_root() / "conf" / "reference", tmp_path / "conf" / "reference")
    problems = check_saves(F, monkeypatch)
    build_report(config_from_params(params), tmp_path)
    figures = tmp_path / params["paths"]["reports"] / "figures"
    written = sorted(p.name for p in figures.glob("*.png"))
    assert len(written) >= 10 and "fig8_model_pairs_all.png" in written
    assert not problems, "\n".join(f"{k}: {'; '.join(v)}" for k, v in sorted(problems.items()))


def test_task_protocol_figures_keep_their_text_inside_the_canvas(tmp_path, monkeypatch) -> None:
    """REFLECT's win-rate heatmap and MCQ distributions, VIGNETTE's log-odds heat map (one
    model, and two side by side): drawn from the tables, no text clipped or overlapping."""
    from stylisticbias.families.tasks.analysis.demo import reflect_demo, vignette_demo, write
    from stylisticbias.families.tasks.report import figures as TF

    problems = check_saves(TF, monkeypatch)
    stacked: dict[str, pd.DataFrame] = {}
    for i, model in enumerate(("simulated-strong", "simulated-weak")):
        demo = reflect_demo(model, n_boot=20) | vignette_demo(model, n_boot=20)
        for name, df in demo.items():
            stacked[name] = pd.concat([stacked[name], df]) if name in stacked else df
        write(stacked, tmp_path / f"tables{i}")
        written = TF.render_task_figures(tmp_path / f"tables{i}", tmp_path / f"figures{i}")
        assert sorted(p.name for p in written) == sorted(TF.TASK_FIGURES)
    assert not problems, "\n".join(f"{k}: {'; '.join(v)}" for k, v in sorted(problems.items()))


def test_vignette_log_odds_of_many_identities_and_terms_stay_readable(monkeypatch) -> None:
    """360 identity x term cells per model (the protocol demo's size): drawn as a heat map that
    fits a screen (at most 16 in tall), no label clipped or on top of another."""
    from stylisticbias.families.tasks.report import figures as TF

    rng = np.random.default_rng(1)
    ids, terms = [f"identity-{i:02d}" for i in range(36)], [f"term {j}" for j in range(10)]
    lo = pd.DataFrame(
        [
            {
                "model": m,
                "activity": t,
                "identity": i,
                "log_odds": rng.normal(0, 0.5),
                "pval": rng.uniform(0, 0.2),
                "simulated": True,
            }
            for m in ("simulated-strong", "simulated-weak")
            for i in ids
            for t in terms
        ]
    )
    lo["ci_low"], lo["ci_high"] = lo["log_odds"] - 0.3, lo["log_odds"] + 0.3
    problems = check_saves(TF, monkeypatch)
    (name,) = [n for n, (table, _) in TF.TASK_FIGURES.items() if table == "vignette_log_odds"]
    fig = TF.TASK_FIGURES[name][1](lo)
    assert fig.get_figheight() <= 16
    bad = text_outside(fig) + point_label_problems(fig)
    assert not bad, bad[:5]
    assert not problems
    plt.close(fig)


def test_vignette_log_odds_of_many_terms_fit_a_screen_with_the_terms_as_rows(monkeypatch) -> None:
    """The protocol demo's shape: 6 identities x 60 terms per model, two models. Terms as
    columns made a 40 x 4 in strip that a 1500 px screen shrinks to ~4 px text; with the terms
    as rows the figure stays within 16 x 16 in, every label readable and nothing overlapping."""
    from stylisticbias.families.tasks.report import figures as TF

    rng = np.random.default_rng(2)
    ids, terms = [f"identity-{i}" for i in range(6)], [f"term {j:02d}" for j in range(60)]
    lo = pd.DataFrame(
        [
            {
                "model": m,
                "activity": t,
                "identity": i,
                "log_odds": rng.normal(0, 0.5),
                "pval": rng.uniform(0, 0.2),
                "simulated": True,
            }
            for m in ("simulated-strong", "simulated-weak")
            for i in ids
            for t in terms
        ]
    )
    problems = check_saves(TF, monkeypatch)
    fig = TF.fig_log_odds_heatmap(lo)
    assert fig.get_figwidth() <= 16 and fig.get_figheight() <= 16
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == terms
    assert [t.get_text() for t in ax.get_xticklabels()] == ids
    bad = text_outside(fig) + point_label_problems(fig)
    assert not bad, bad[:5]
    assert not problems
    plt.close(fig)
