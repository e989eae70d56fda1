"""The static leaderboard: rendered from the real analysis, opened in headless Chromium
(renders, sorts, per-model pages, no console error, no network request), every string
escaped, and the 100-model page within 5 MB, drawn without errors. How fast it opens (target
< 2 s) is a benchmark, not a test a busy machine could fail: ``python -m
stylisticbias_dev.bench.leaderboard`` -> ``reports/bench/leaderboard.json``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from stylisticbias.analysis.headline import Headline, wilson
from stylisticbias.config import project_root
from stylisticbias.report.leaderboard import LeaderboardModel, render, script_json
from stylisticbias.report.offline_plots import vendored_builds
from stylisticbias_dev.bench.leaderboard import PLOTS_DRAWN, synthetic_models
from stylisticbias_dev.headless import NoBrowser, browser, open_page

needs_browser = pytest.mark.skipif(
    browser() is None, reason="no Chromium on PATH (apt-get install -y chromium)"
)
ROWS = "Array.from(document.querySelectorAll('#board tbody tr td:first-child a'))"
NAMES = ROWS + ".map(a => a.textContent)"


def _value(page, key: str) -> list[float]:
    return page.eval(
        f"Array.from(document.querySelectorAll('#board tbody tr')).map(r => "
        f"parseFloat(r.cells[Array.from(document.querySelectorAll('#board th'))"
        f".findIndex(h => h.dataset.key === '{key}')].dataset.v))"
    )


@pytest.fixture
def demo_board(tmp_path: Path, report_output) -> Path:
    params = report_output(["simulated-strong", "simulated-weak"], simulated=True)  # once a session
    return tmp_path / params["paths"]["reports"] / "leaderboard" / "index.html"


def test_wilson_matches_statsmodels() -> None:
    from statsmodels.stats.proportion import proportion_confint

    for k, n in ((0, 10), (3, 10), (17, 34), (34, 34)):
        lo, hi = wilson(k, n)
        want = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert (lo, hi) == pytest.approx(want, abs=1e-12)


@needs_browser
def test_opens_offline_shows_both_models_with_cis_and_sorts(demo_board: Path) -> None:
    html_text = demo_board.read_text(encoding="utf-8")
    assert "<script src" not in html_text and 'http-equiv="Content-Security-Policy"' in html_text
    with open_page(demo_board, "document.querySelectorAll('.plots svg').length === 4") as page:
        assert page.errors == []
        assert [u for u in page.requests if not u.startswith("file:")] == []
        assert sorted(page.eval(NAMES)) == ["simulated-strong", "simulated-weak"]
        n_ci = page.eval("document.querySelectorAll('#board tbody .ci').length")
        assert n_ci >= 2 * 9  # every metric with an interval shows it
        for _ in range(2):  # descending, then ascending
            page.eval("document.querySelector('#board th[data-key=\"sbs\"]').click()")
            vals = _value(page, "sbs")
            order = page.eval(
                "document.querySelector('#board th[data-key=\"sbs\"]').getAttribute('aria-sort')"
            )
            assert vals == sorted(vals, reverse=order == "descending"), order
        page.eval(ROWS + "[1].click()")  # a model's page
        shown = page.eval(
            "Array.from(document.querySelectorAll('section.model'))"
            ".filter(s => getComputedStyle(s).display !== 'none').map(s => s.id)"
        )
        assert len(shown) == 1 and page.eval(f"location.hash === '#{shown[0]}'")
        assert page.errors == []


def test_every_string_is_escaped() -> None:
    evil = "</script><script>alert(1)</script>&<b>\u2028"
    h = Headline("sbs", "SBS " + evil, 0.1, 0.0, 0.2)
    models = [LeaderboardModel(evil, True, (h,))]
    page = render(models, {"vega": "", "vega-lite": "", "vega-embed": ""})
    assert "<script>alert(1)" not in page and "<b>" not in page
    assert page.count("</script>") == page.count("<script")  # nothing closes early
    assert "\u2028" not in script_json({"x": evil})
    assert json.loads(script_json({"x": evil})) == {"x": evil}


@needs_browser
def test_hostile_model_names_render_as_text(tmp_path: Path) -> None:
    models = synthetic_models(3)  # names like 'model-000 <&"\'>'
    models[0] = dataclasses.replace(models[0], label="<img src=x onerror=alert(1)>")
    page_path = tmp_path / "index.html"
    page_path.write_text(render(models, vendored_builds(project_root())), encoding="utf-8")
    with open_page(page_path, PLOTS_DRAWN) as page:
        assert page.eval("document.querySelectorAll('img').length") == 0
        assert "<img src=x onerror=alert(1)>" in page.eval(NAMES)
        assert page.errors == [] and all(u.startswith("file:") for u in page.requests)


@needs_browser
def test_hundred_models_under_5_mb_draw_every_row(tmp_path: Path) -> None:
    page_path = tmp_path / "index.html"
    page_path.write_text(
        render(synthetic_models(100), vendored_builds(project_root())), encoding="utf-8"
    )
    assert page_path.stat().st_size < 5e6
    try:
        with open_page(page_path, PLOTS_DRAWN) as page:
            assert page.errors == [] and len(page.eval(NAMES)) == 100
    except NoBrowser:  # pragma: no cover
        pytest.skip("no Chromium")
