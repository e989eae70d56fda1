"""Offline ``dvc plots show``: the vendored template, and its plots drawn in headless Chromium
with every host name unresolvable (no CDN)."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dvc_render.html import PAGE_HTML

from stylisticbias.config import compose
from stylisticbias.errors import StylisticBiasError
from stylisticbias.report.offline_plots import (
    PLOTS_DIR,
    TEMPLATE_NAME,
    VENDORED,
    build_template,
    check_template,
)

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / PLOTS_DIR / TEMPLATE_NAME
CHROMIUM = Path("/usr/bin/chromium")
#: the committed report whose plots dvc.yaml declares (the default protocol's: reports/<protocol>)
REPORTS = compose()["paths"]["reports"]
#: DVC's element id of a plot's CSV: its path with "/" and "." as "_"
PLOT_ID = REPORTS.replace("/", "_") + "_plots_{}_csv"
#: dvc.yaml's bar plots: CSV -> (value column, label column); and its line plot.
BARS = {"sbs_by_scenario": ("sbs", "scenario"), "cross_model_variance": ("variance", "scenario")}
LINE = ("pareto", "rank", "cum_share")


def _template_text() -> str:
    return TEMPLATE.read_bytes().decode("utf-8")


def test_committed_template_inlines_the_pinned_builds() -> None:
    text = _template_text()
    check_template(text)  # packages, versions, sha256 of each inlined build
    assert "cdn.jsdelivr" not in text and "{scripts}" not in text
    for v in VENDORED:
        assert (ROOT / PLOTS_DIR / "licenses" / f"{v.package}.LICENSE").is_file()
    assert "d3-array@" in (ROOT / PLOTS_DIR / "licenses" / "THIRD_PARTY_LICENSES.txt").read_text()


def test_marked_templates_are_dvcs_own_plus_the_caveat_layer() -> None:
    """.dvc/plots/marked_<name>.json: DVC's built-in <name> template (its unit spec as the first
    layer, or its layers first) and one more layer that writes the data's ``caveat``."""
    import json

    from dvc_render.vega_templates import TEMPLATES

    builtin = {t.DEFAULT_NAME: t.DEFAULT_CONTENT for t in TEMPLATES}
    marked = sorted((ROOT / PLOTS_DIR).glob("marked_*.json"))
    assert marked
    for path in marked:
        spec = json.loads(path.read_text(encoding="utf-8"))
        base = builtin[path.stem.removeprefix("marked_")]
        *layers, caveat = spec.pop("layer")
        assert caveat["encoding"]["text"] == {"field": "caveat", "type": "nominal"}
        assert "isValid(datum.caveat)" in caveat["transform"][0]["filter"]
        if "layer" in base:
            assert {**spec, "layer": layers} == base, path.name
        else:
            top = {k: v for k, v in base.items() if k in spec}
            assert top == spec and layers == [{k: v for k, v in base.items() if k not in spec}]


def test_dvc_config_points_at_the_template() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dvc", "config", "plots.html_template"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "DVC_NO_ANALYTICS": "1"},
    )
    assert (ROOT / ".dvc" / done.stdout.strip()).resolve() == TEMPLATE.resolve()


def test_check_template_detects_changes() -> None:
    text = _template_text()
    first = f'data-package="{VENDORED[0].package}" data-version="{VENDORED[0].version}">\n'
    i = text.index(first) + len(first) + 100
    flipped = text[:i] + ("a" if text[i] != "a" else "b") + text[i + 1 :]
    with pytest.raises(StylisticBiasError, match="differ from the pinned ones: vega@"):
        check_template(flipped)
    head, _, body = text.rpartition("</head>")  # the page's own (the builds contain the string)
    with pytest.raises(StylisticBiasError, match="outside the page"):
        check_template(f'{head}<script src="https://x/vega.js"></script></head>{body}')
    with pytest.raises(StylisticBiasError, match="outside the page"):
        check_template(f"{head}{{scripts}}</head>{body}")
    with pytest.raises(StylisticBiasError, match="plot_divs"):
        check_template(text.replace("{plot_divs}", ""))


def test_build_template_refuses_builds_that_break_the_page() -> None:
    ok = {v.package: "var x = 1;\n" for v in VENDORED}
    assert "{plot_divs}" in build_template(ok)
    for bad in ('s = "</script>";\n', 'f("{plot_divs}");\n', "g('{refresh_tag}');\n"):
        with pytest.raises(StylisticBiasError, match="contains"):
            build_template({**ok, VENDORED[1].package: bad})


class _Marks(HTMLParser):
    """Vega's SVG marks (``role="graphics-symbol"``) grouped by the DVC plot div around them."""

    def __init__(self, plot_ids: set[str]) -> None:
        super().__init__()
        self.plot_ids = plot_ids
        self.divs: list[str | None] = []
        self.marks: dict[str, list[dict[str, str]]] = {p: [] for p in plot_ids}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "div":
            self.divs.append(a.get("id") if a.get("id") in self.plot_ids else None)
        plot = next((d for d in reversed(self.divs) if d), None)
        if plot and a.get("role") == "graphics-symbol":
            self.marks[plot].append({"tag": tag, **a})

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.divs:
            self.divs.pop()


def _label(mark: dict[str, str]) -> dict[str, str]:
    """``aria-label="sbs: −0.016; scenario: X; rev: workspace"`` -> dict."""
    parts = (p.split(": ", 1) for p in mark["aria-label"].split("; "))
    return {k: v.replace("\u2212", "-") for k, v in parts}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A minimal DVC project with this repo's config, template, plot definitions and CSVs."""
    dst = tmp_path_factory.mktemp("project")
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    subprocess.run(["git", "init", "-q"], cwd=dst, check=True)
    subprocess.run([sys.executable, "-m", "dvc", "init", "-q"], cwd=dst, check=True, env=env)
    shutil.copy(ROOT / ".dvc" / "config", dst / ".dvc" / "config")
    shutil.copytree(ROOT / PLOTS_DIR, dst / PLOTS_DIR, dirs_exist_ok=True)
    for f in ("dvc.yaml", "params.yaml"):
        shutil.copy(ROOT / f, dst / f)
    for d in (f"{REPORTS}/plots", f"{REPORTS}/figures"):
        shutil.copytree(ROOT / d, dst / d)
    return dst


def _plots_show(project: Path, *args: str) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "dvc", "plots", "show", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DVC_NO_ANALYTICS": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "failed to load" not in done.stdout + done.stderr, done.stdout + done.stderr
    return Path(done.stdout.strip().splitlines()[-1].removeprefix("file://"))


def _offline_dom(html: Path, profile: Path) -> str:
    """The page's DOM after its scripts ran, in headless Chromium that resolves no host name."""
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: every name fails to resolve
        "--proxy-server=http://127.0.0.1:9",  # ... and anything that skips DNS hits a dead port
        f"--user-data-dir={profile}",
        "--virtual-time-budget=15000",
        "--dump-dom",
        html.resolve().as_uri(),
    ]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120).stdout


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium not installed (apt-get install chromium)"
)
def test_dvc_plots_show_renders_offline_in_chromium(project: Path, tmp_path: Path) -> None:
    html = _plots_show(project)  # what a user runs: the template comes from .dvc/config
    assert html == (project / "dvc_plots" / "index.html").resolve()
    page = html.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]*\ssrc=", page), "the page loads a script from elsewhere"
    assert list((html.parent / "static").glob("*.png")), "the report's figures are missing"

    ids = {PLOT_ID.format(name) for name in [*BARS, LINE[0]]}
    parser = _Marks(ids)
    parser.feed(_offline_dom(html, tmp_path / "profile"))

    # Each bar plot draws one bar per CSV row, labelled with that row, of width ∝ |value|.
    for name, (value, label) in BARS.items():
        csv = pd.read_csv(ROOT / REPORTS / "plots" / f"{name}.csv")
        bars = [
            m for m in parser.marks[PLOT_ID.format(name)] if m.get("aria-roledescription") == "bar"
        ]
        assert len(bars) == len(csv), f"{name}: {len(bars)} bars for {len(csv)} rows"
        drawn = {_label(b)[label]: float(_label(b)[value]) for b in bars}
        want = dict(zip(csv[label], csv[value], strict=True))
        assert drawn.keys() == want.keys()
        for k, v in want.items():
            assert math.isclose(drawn[k], v, rel_tol=1e-5), (name, k, drawn[k], v)
        widths = {_label(b)[label]: abs(float(re.search(r"h(-?[\d.]+)", b["d"])[1])) for b in bars}
        big = [k for k in want if abs(want[k]) > 0.05 * max(abs(x) for x in want.values())]
        ratio = np.array([widths[k] / abs(want[k]) for k in big])
        assert ratio.max() / ratio.min() < 1.02, f"{name}: bar widths not proportional"

    # The Pareto line passes through every (rank, cum_share) point, in order.
    name, xcol, ycol = LINE
    csv = pd.read_csv(ROOT / REPORTS / "plots" / f"{name}.csv").sort_values(xcol)
    lines = [
        m
        for m in parser.marks[PLOT_ID.format(name)]
        if m.get("aria-roledescription") == "line mark"
    ]
    assert lines, f"{name}: no line drawn"
    pts = np.array(re.findall(r"[ML](-?[\d.]+),(-?[\d.]+)", lines[0]["d"]), dtype=float)
    assert len(pts) == len(csv)
    for col, axis in ((xcol, 0), (ycol, 1)):  # screen = a + b * data, to the pixel rounding
        data = csv[col].to_numpy(float)
        fit = np.polyval(np.polyfit(data, pts[:, axis], 1), data)
        assert np.abs(fit - pts[:, axis]).max() < 0.01, f"{name}: {col} not where the data is"


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium not installed (apt-get install chromium)"
)
def test_stock_dvc_page_draws_nothing_offline(project: Path, tmp_path: Path) -> None:
    """Control: DVC's own page (vega from cdn.jsdelivr.net) stays blank in the same browser,
    so the test above would fail on a template that needs the network."""
    stock = tmp_path / "stock.html"
    stock.write_text(PAGE_HTML, encoding="utf-8")
    html = _plots_show(project, "--html-template", str(stock), "-o", "stock_plots")
    assert "cdn.jsdelivr.net" in html.read_text(encoding="utf-8")
    ids = {PLOT_ID.format(name) for name in [*BARS, LINE[0]]}
    parser = _Marks(ids)
    parser.feed(_offline_dom(html, tmp_path / "profile"))
    assert all(not marks for marks in parser.marks.values())
