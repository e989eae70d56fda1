"""The browser check of every HTML page the project writes: opened in headless
Chromium at 1280 and 1500 px, the page is no wider than the window (``scrollWidth <=
innerWidth``: no column off-screen) and its first viewport is not blank, for the leaderboard
(and a model's page, ``index.html#m0``) and the page of ``dvc plots show`` (its figures scaled
to the window, its plots marked SIMULATED from the data); the wide table scrolls inside its
frame with the model column in place; the plots sorted as the report's figures are. The
gallery's check is in tests/test_gallery.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from stylisticbias.analysis.headline import Headline
from stylisticbias.config import project_root
from stylisticbias.report.leaderboard import ALL_EQUAL, LeaderboardModel, render
from stylisticbias.report.offline_plots import PLOTS_DIR, vendored_builds
from stylisticbias.report.run import PLOT_CAVEAT, write_plot_data
from stylisticbias_dev.bench.leaderboard import PLOTS_DRAWN, synthetic_models
from stylisticbias_dev.headless import browser, layout_problems, open_page

needs_browser = pytest.mark.skipif(
    browser() is None, reason="no Chromium on PATH (apt-get install -y chromium)"
)
#: every plot drawn to the end (its axis labels are the last marks vega renders): an svg alone
#: exists as soon as vega starts, before its axes, on a busy machine seconds before
DRAWN = (
    "Array.from(document.querySelectorAll('.plots > div'))"
    ".every(d => d.querySelector('svg .role-axis-label text'))"
)


@pytest.fixture
def demo_board(tmp_path: Path, report_output) -> Path:
    params = report_output(["simulated-strong", "simulated-weak"], simulated=True)  # once a session
    return tmp_path / params["paths"]["reports"] / "leaderboard" / "index.html"


@needs_browser
def test_leaderboard_fits_the_window_and_shows_something(demo_board: Path) -> None:
    assert layout_problems(demo_board, DRAWN, fragments=("", "#m0")) == []


#: every vega plot of the ``dvc plots show`` page drawn (the figures are <img>)
VEGA_DRAWN = (
    "Array.from(document.querySelectorAll('body > div[id]'))"
    ".filter(d => !d.querySelector('img')).every(d => d.querySelector('svg'))"
)
#: the text the plots' caveat layer drew (the templates' last layer)
WATERMARKS = (
    "Array.from(document.querySelectorAll('g.role-mark.mark-text text')).map(t => t.textContent)"
)


def _dvc_plots_page(root: Path) -> Path:
    """``dvc plots show`` on the report under ``root`` with this project's dvc.yaml and
    ``.dvc/`` (config, templates): the page a user opens."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    if not (root / ".dvc").is_dir():
        dvc_init = [sys.executable, "-m", "dvc", "init", "-q", "--no-scm"]
        subprocess.run(dvc_init, cwd=root, check=True, env=env)
        shutil.copy(project_root() / ".dvc" / "config", root / ".dvc" / "config")
        shutil.copytree(project_root() / PLOTS_DIR, root / PLOTS_DIR, dirs_exist_ok=True)
        shutil.copy(project_root() / "dvc.yaml", root / "dvc.yaml")
        shutil.copy(project_root() / "params.yaml", root / "params.yaml")
    cmd = [sys.executable, "-m", "dvc", "plots", "show", "-o", "dvc_plots"]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return root / "dvc_plots" / "index.html"


@needs_browser
def test_dvc_plots_page_fits_the_window_and_is_marked_simulated_by_its_data(
    demo_board: Path, tmp_path: Path
) -> None:
    root, reports = tmp_path, demo_board.parents[1]  # the simulated demo's project, its report
    page = _dvc_plots_page(root)
    assert len(list((page.parent / "static").glob("*.png"))) >= 5  # the report's figures too
    assert layout_problems(page, VEGA_DRAWN) == []  # no figure cut at the window's edge
    with open_page(page, VEGA_DRAWN, size=(1500, 1100)) as shown:
        assert shown.eval(WATERMARKS) == [PLOT_CAVEAT] * 3  # one per plot of the CSVs
    # the same plots from a real model: the report writes no caveat, the plots show none
    plots = reports / "plots"
    frames = {p.stem: pd.read_csv(p).drop(columns="caveat") for p in plots.glob("*.csv")}
    write_plot_data(frames, plots, simulated=False)
    with open_page(_dvc_plots_page(root), VEGA_DRAWN, size=(1500, 1100)) as shown:
        assert shown.eval(WATERMARKS) == []
        assert shown.eval("document.querySelectorAll('.role-mark.mark-rect path').length") > 0


@needs_browser
def test_the_layout_check_catches_a_page_wider_than_the_window_and_a_blank_viewport(
    tmp_path: Path,
) -> None:
    """The check can fail: a table wider than the window and not framed (the leaderboard's
    before its frame scrolled: scrollWidth 1757 at both widths) and a page whose first
    viewport is empty (its content below the fold), each named at 1280 and 1500 px."""
    cells = "".join(f"<th>column {i} of a wide table</th>" for i in range(30))
    wide = tmp_path / "wide.html"
    wide.write_text(
        "<!doctype html><html><body><table style='white-space: nowrap; background: #cde'>"
        f"{f'<tr>{cells}</tr>' * 20}</table></body></html>",
        encoding="utf-8",
    )
    blank = tmp_path / "blank.html"
    blank.write_text(
        "<!doctype html><html><body><div style='height: 4000px'></div>"
        "<p>everything below the fold</p></body></html>",
        encoding="utf-8",
    )
    too_wide = layout_problems(wide)
    assert [p.split(": ", 1)[0] for p in too_wide] == [
        "wide.html at 1280x1100",
        "wide.html at 1500x1100",
    ]
    assert all("scrollWidth" in p and "> innerWidth" in p for p in too_wide), too_wide
    empty = layout_problems(blank)
    assert [p.split(": ", 1)[0] for p in empty] == [
        "blank.html at 1280x1100",
        "blank.html at 1500x1100",
    ]
    assert all("blank first viewport" in p for p in empty), empty


@needs_browser
def test_hundred_model_leaderboard_fits_the_window(tmp_path: Path) -> None:
    page = tmp_path / "index.html"
    page.write_text(render(synthetic_models(100), vendored_builds(project_root())), "utf-8")
    assert layout_problems(page, PLOTS_DRAWN, fragments=("", "#m99")) == []


@needs_browser
def test_wide_table_scrolls_in_its_frame_with_the_model_column_in_place(demo_board: Path) -> None:
    with open_page(demo_board, DRAWN, size=(1280, 1100)) as page:
        frame = "document.querySelector('#board').parentElement"
        assert page.eval(f"{frame}.scrollWidth > {frame}.clientWidth")  # it does scroll
        first = "document.querySelector('#board tbody td').getBoundingClientRect().left"
        other = (
            "document.querySelector('#board tbody td:nth-child(3)').getBoundingClientRect().left"
        )
        before = page.eval(f"[{first}, {other}]")
        page.eval(f"{frame}.scrollLeft = 400")
        after = page.eval(f"[{first}, {other}]")
        assert after[0] == pytest.approx(before[0], abs=1)  # the model column stays
        assert after[1] < before[1] - 100  # the others move


@needs_browser
def test_plots_are_sorted_by_value_and_sit_top_aligned(demo_board: Path) -> None:
    """Fig. 3 and the SBS-per-model plot: the largest on top, as the report's Fig. 3; no plot
    starts lower than the tallest plot beside it would leave room for (no gaps)."""
    with open_page(demo_board, DRAWN, size=(1500, 1100)) as page:
        for i, field in ((0, "model"), (3, "scenario")):
            spec = page.eval(
                f"JSON.parse(document.querySelector('script[data-plot=plot{i}]').textContent)"
            )
            value = "value" if field == "model" else "sbs"
            want = [r[field] for r in sorted(spec["data"]["values"], key=lambda r: -r[value])]
            shown = page.eval(
                f"Array.from(document.querySelectorAll('#plot{i} .role-axis-label')).map("
                "g => Array.from(g.querySelectorAll('text')).map(t => t.textContent))"
                ".find(ts => ts.length && isNaN(parseFloat(ts[0].replace('\u2212', '-'))))"
            )
            assert shown == want[: len(shown)] and len(shown) == len(want), field
        boxes = page.eval(
            "Array.from(document.querySelectorAll('.plots > div')).map(d => {"
            "const r = d.getBoundingClientRect(), s = d.querySelector('svg')"
            ".getBoundingClientRect(); return [r.left, r.top, r.bottom, s.top - r.top]})"
        )
        for left, top, _bottom, svg_offset in boxes:
            assert svg_offset < 5  # drawn at the top of its box, not pushed to its bottom
            above = [b for b in boxes if abs(b[0] - left) < 1 and b[2] <= top + 1]
            if above:  # stacked in a column: right under the one above
                assert top - max(b[2] for b in above) < 60


def test_intervals_print_apart_and_a_zero_width_one_says_so() -> None:
    hs = (
        Headline("sbs", "SBS", 0.0199, 0.0196, 0.0202),  # [0.020, 0.020] at 3 decimals
        Headline("invalid_rate", "invalid", 0.02, 0.02, 0.02),  # every face the same
    )
    page = render(
        [LeaderboardModel("m", True, hs)], {"vega": "", "vega-lite": "", "vega-embed": ""}
    )
    assert "[0.020, 0.020]" not in page and "[0.0196, 0.0202]" in page
    assert (
        f'<span class="ci" title="zero-width interval: every face has the same value">{ALL_EQUAL}'
        in page
    )


def test_abs_sbs_has_the_interval_of_the_absolute_value() -> None:
    from stylisticbias.analysis.headline import abs_interval

    assert abs_interval(-0.03, -0.01) == (0.01, 0.03)
    assert abs_interval(0.01, 0.03) == (0.01, 0.03)
    assert abs_interval(-0.01, 0.03) == (0.0, 0.03)  # holds 0: from 0 to the farther end
    assert abs_interval(None, 0.1) == (None, None)
    import pandas as pd

    from stylisticbias.analysis.headline import model_headline

    overall = pd.DataFrame(
        {
            "model": ["m"],
            "sbs": [-0.02],
            "abs_sbs": [0.02],
            "ci_low": [-0.03],
            "ci_high": [-0.01],
            "pval_corr": [0.01],
        }
    )
    (h,) = [h for h in model_headline({"sbs_overall": overall}, "m", 0.05) if h.key == "abs_sbs"]
    assert (h.value, h.ci_low, h.ci_high) == (0.02, 0.01, 0.03)
