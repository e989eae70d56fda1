"""Figure helpers: Fig. 4's point labels do not overlap, Fig. 3's title says its order."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.text import Text

from stylisticbias.report.figures import declutter, fig_scenarios, fig_sensitivity


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


def test_fig4_labels_do_not_overlap() -> None:
    fig = fig_sensitivity(_scenarios(), simulated=False)
    boxes = _label_boxes(fig)
    assert len(boxes) == 25
    overlaps = [(a, b) for a, b in itertools.combinations(boxes, 2) if a.overlaps(b)]
    assert not overlaps
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
