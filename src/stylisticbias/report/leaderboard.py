"""``reports/leaderboard/index.html``: the judged models side by side, one offline file.

Models x headline metrics (:mod:`stylisticbias.analysis.headline`), each value with its
interval, sortable by any column; the key figures as interactive vega-lite plots drawn by the
vega / vega-lite / vega-embed builds vendored for ``dvc plots`` (inlined, checked against their
pinned sha256s: :func:`~stylisticbias.report.offline_plots.vendored_builds`); a page per model
(a section shown when its link is followed). Self-contained: no file beside it, no network
request (the page's Content-Security-Policy forbids any), every string HTML-escaped and every
embedded JSON escaped so that no name can close its element.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.analysis.headline import Headline, model_headline
from stylisticbias.outputs import atomic_write_text
from stylisticbias.report.offline_plots import vendored_builds

log = logging.getLogger(__name__)

#: headline keys shown as leaderboard columns, in order (the per-category SBS follow)
COLUMNS: tuple[str, ...] = (
    "sbs",
    "abs_sbs",
    "vs_debiased.age",
    "vs_debiased.gender",
    "vs_debiased.ethnicity",
    "vs_debiased.body_type",
    "significant_share",
    "invalid_rate",
    "cohens_d",
    "n_variations_80",
)

_SOURCE_MAP = re.compile(r"\n//# sourceMappingURL=\S+\s*$")

#: nothing may be loaded from anywhere (vega compiles its expressions: unsafe-eval)
_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data:; connect-src 'none'"
)


@dataclass(frozen=True)
class LeaderboardModel:
    """One row: the model's name in the tables, how it was judged, its headline."""

    label: str
    simulated: bool
    headline: tuple[Headline, ...]

    def get(self, key: str) -> Headline | None:
        """The headline number ``key``, if this model has it."""
        return next((h for h in self.headline if h.key == key), None)


def script_json(obj: Any) -> str:
    """JSON safe inside a ``<script>`` element: ``<``, ``>``, ``&`` and the JS line separators
    escaped, so no string can end the element or start a comment."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)
    for ch, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, esc)
    return text


def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None:
        return "&ndash;"
    if float(v).is_integer() and abs(v) >= 1:
        return f"{int(v)}"
    text = f"{v:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # no "-0.000"


#: what an interval of zero width reads (every face, so every resample, has the same value)
ALL_EQUAL = "all equal"


def _digits(lo: float, hi: float, digits: int = 3, most: int = 6) -> int:
    """The fewest decimals (at least ``digits``) at which ``lo`` and ``hi`` print apart, so
    that no interval of non-zero width reads ``[0.020, 0.020]``."""
    while digits < most and f"{lo:.{digits}f}" == f"{hi:.{digits}f}":
        digits += 1
    return digits


def _cell(h: Headline | None) -> str:
    if h is None or h.value is None:
        return '<td data-v="">&ndash;</td>'
    digits, ci = 3, ""
    if h.has_ci:
        lo, hi = float(h.ci_low), float(h.ci_high)  # type: ignore[arg-type]
        if lo == hi:
            why = "zero-width interval: every face has the same value"
            ci = f'<span class="ci" title="{why}">{ALL_EQUAL}</span>'
        else:
            digits = _digits(lo, hi)
            ci = f'<span class="ci">[{_fmt(lo, digits)}, {_fmt(hi, digits)}]</span>'
    return f'<td data-v="{h.value!r}">{_fmt(h.value, digits)}{ci}</td>'


def _interval_text(h: Headline, digits: int = 4) -> str:
    """``[lo, hi]`` of a model page (``all equal`` at zero width, empty without one)."""
    if not h.has_ci:
        return ""
    lo, hi = float(h.ci_low), float(h.ci_high)  # type: ignore[arg-type]
    if lo == hi:
        return ALL_EQUAL
    d = _digits(lo, hi, digits)
    return f"[{_fmt(lo, d)}, {_fmt(hi, d)}]"


def _columns(models: Sequence[LeaderboardModel]) -> list[tuple[str, str]]:
    """(key, label) of every column any model has: the fixed ones, then the categories."""
    seen: dict[str, str] = {}
    for m in models:
        for h in m.headline:
            seen.setdefault(h.key, h.label)
    fixed = [(k, seen[k]) for k in COLUMNS if k in seen]
    tail = sorted((k, v) for k, v in seen.items() if k.startswith("sbs.category."))
    return fixed + tail


def _interval_layers(value: str, title: str, point_params: list[dict] | None = None) -> list:
    """A rule from ``ci_low`` to ``ci_high`` and a filled point at ``value``."""
    point: dict[str, Any] = {
        "mark": {"type": "point", "filled": True},
        "encoding": {"x": {"field": value, "type": "quantitative"}},
    }
    if point_params:
        point["params"] = point_params
    return [
        {
            "mark": "rule",
            "encoding": {
                "x": {"field": "ci_low", "type": "quantitative", "title": title},
                "x2": {"field": "ci_high"},
            },
        },
        point,
    ]


def _plots(models: Sequence[LeaderboardModel], scenarios: pd.DataFrame | None) -> list[dict]:
    """vega-lite specs: SBS per model (forest), SBS per category x model, de-biased VS per
    dimension x model, SBS per scenario (pooled, Fig. 3)."""
    rows = [
        {
            "model": m.label,
            "key": h.key,
            "label": h.label,
            "value": h.value,
            "ci_low": h.ci_low,
            "ci_high": h.ci_high,
        }
        for m in models
        for h in m.headline
        if h.value is not None
    ]
    sel = {"name": "pick", "select": {"type": "point", "fields": ["model"]}, "bind": "legend"}
    tooltip = [
        {"field": "model"},
        {"field": "label", "title": "metric"},
        {"field": "value", "format": ".4f"},
        {"field": "ci_low", "format": ".4f"},
        {"field": "ci_high", "format": ".4f"},
    ]

    def forest(title: str, prefix: str, y: str, ylabel: str) -> dict:
        filt = f"indexof(datum.key, '{prefix}') === 0"
        color = {"field": "model", "type": "nominal", "legend": {"orient": "bottom"}}
        return {
            "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "title": title,
            "data": {"values": rows},
            "transform": [{"filter": filt}],
            "width": 520,
            "encoding": {
                "y": {"field": y, "type": "nominal", "title": ylabel, "sort": None},
                "yOffset": {"field": "model"},
                "color": color,
                "opacity": {"condition": {"param": "pick", "value": 1}, "value": 0.15},
                "tooltip": tooltip,
            },
            "layer": _interval_layers("value", title, [sel]),
        }

    specs = [
        {
            "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "title": "SBS per model (95% CI), largest on top",
            "data": {"values": [r for r in rows if r["key"] == "sbs"]},
            "width": 520,
            "encoding": {
                "y": {
                    "field": "model",
                    "type": "nominal",
                    "sort": {"field": "value", "order": "descending"},
                    "title": None,
                },
                "tooltip": tooltip,
            },
            "layer": _interval_layers("value", "SBS"),
        },
        forest("SBS per category", "sbs.category.", "label", "category"),
        forest("VS (de-biased) per dimension", "vs_debiased.", "label", "dimension"),
    ]
    if scenarios is not None and len(scenarios):
        sc = [
            {
                "scenario": str(r.scenario),
                "sbs": float(r.sbs),
                "ci_low": float(r.ci_low),
                "ci_high": float(r.ci_high),
            }
            for r in scenarios.itertuples(index=False)
        ]
        specs.append(
            {
                "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
                "title": "Fig. 3: SBS per scenario (pooled over models, 95% CI), largest on top",
                "data": {"values": sc},
                "width": 520,
                "encoding": {
                    "y": {
                        "field": "scenario",
                        "type": "nominal",
                        "sort": {"field": "sbs", "order": "descending"},
                        "title": None,
                    },
                    "tooltip": [
                        {"field": "scenario"},
                        {"field": "sbs", "format": ".4f"},
                        {"field": "ci_low", "format": ".4f"},
                        {"field": "ci_high", "format": ".4f"},
                    ],
                },
                "layer": _interval_layers("sbs", "SBS"),
            }
        )
    return specs


_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:separate;border-spacing:0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:right;vertical-align:top}
th{cursor:pointer;position:sticky;top:0;z-index:1;background:#f6f6f6;font-weight:600}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td:first-child,th:first-child{text-align:left}
.frame{max-width:100%;max-height:75vh;overflow:auto;border:1px solid #ccc}
.frame td:first-child,.frame th:first-child{position:sticky;left:0;z-index:2;background:#fff;
border-right:1px solid #ccc;min-width:10em;max-width:16em;overflow-wrap:anywhere}
.frame th:first-child{z-index:3;background:#f6f6f6}
.hint{color:#555;font-size:12px;margin:.3em 0}
.ci{display:block;color:#777;font-size:11px;white-space:nowrap}
.banner{background:#fff3cd;border:1px solid #e0c060;padding:8px;margin:1em 0}
.model{display:none}.model:target{display:block}
body:has(.model:target) #board-page{display:none}
.plots{column-width:680px;column-gap:2em;margin-top:1em}
.plots>div{break-inside:avoid;margin:0 0 1.5em;max-width:100%;overflow-x:auto}
"""

_SCRIPT = """
(function () {
  var table = document.getElementById("board");
  var heads = table.tHead.rows[0].cells;
  function sortBy(i) {
    var th = heads[i];
    var dir = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
    for (var j = 0; j < heads.length; j++) heads[j].removeAttribute("aria-sort");
    th.setAttribute("aria-sort", dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var sign = dir === "ascending" ? 1 : -1;
    rows.sort(function (a, b) {
      var x = a.cells[i].getAttribute("data-v"), y = b.cells[i].getAttribute("data-v");
      var nx = parseFloat(x), ny = parseFloat(y);
      var ex = isNaN(nx), ey = isNaN(ny);
      if (i === 0) { return sign * x.localeCompare(y); }
      if (ex || ey) { return ex - ey; }
      return sign * (nx - ny);
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  for (var i = 0; i < heads.length; i++) {
    heads[i].addEventListener("click", sortBy.bind(null, i));
  }
  var specs = document.querySelectorAll("script[data-plot]");
  specs.forEach(function (el) {
    var div = document.getElementById(el.getAttribute("data-plot"));
    vegaEmbed(div, JSON.parse(el.textContent), {renderer: "svg", actions: false})
      .catch(function (err) { console.error(err); });
  });
})();
"""

#: the page's style, sorting script and Content-Security-Policy, for the other static
#: leaderboards (the audit's cross-protocol one: :mod:`stylisticbias.audit.render`)
PAGE_STYLE, SORT_SCRIPT, PAGE_CSP = _STYLE, _SCRIPT, _CSP


def render(
    models: Sequence[LeaderboardModel],
    builds: Mapping[str, str],
    scenarios: pd.DataFrame | None = None,
    title: str = "StylisticBias leaderboard",
    note: str = "",
) -> str:
    """The whole page (deterministic: same inputs, same bytes)."""
    esc = html.escape
    cols = _columns(models)
    head = "".join(
        f'<th scope="col" data-key="{esc(k)}">{esc(label)}</th>'
        for k, label in [("model", "model"), *cols]
    )
    body = []
    for i, m in enumerate(models):
        sim = " <small>(simulated)</small>" if m.simulated else ""
        cells = "".join(_cell(m.get(k)) for k, _ in cols)
        link = f'<a href="#m{i}">{esc(m.label)}</a>{sim}'
        body.append(f'<tr><td data-v="{esc(m.label)}">{link}</td>{cells}</tr>')
    pages = []
    for i, m in enumerate(models):
        rows = "".join(
            f"<tr><td>{esc(h.label)}</td><td>{esc(h.key)}</td><td>{_fmt(h.value, 4)}</td>"
            f"<td>{_interval_text(h)}"
            f"</td><td>{_fmt(h.pval, 4) if h.pval is not None else ''}</td></tr>"
            for h in m.headline
        )
        sim = ' <span class="banner">SIMULATED judge</span>' if m.simulated else ""
        pages.append(
            f'<section class="model" id="m{i}"><h2>{esc(m.label)}{sim}</h2>'
            "<table><thead><tr><th>metric</th><th>key</th><th>value</th><th>95% CI</th>"
            f"<th>p (corrected)</th></tr></thead><tbody>{rows}</tbody></table>"
            '<p><a href="#top">back to the leaderboard</a></p></section>'
        )
    specs = _plots(models, scenarios)
    plot_divs = "".join(f'<div id="plot{i}"></div>' for i in range(len(specs)))
    plot_json = "".join(
        f'<script type="application/json" data-plot="plot{i}">{script_json(s)}</script>'
        for i, s in enumerate(specs)
    )
    libs = "".join(f"<script>{_SOURCE_MAP.sub(chr(10), code)}</script>" for code in builds.values())
    banner = (
        '<p class="banner"><strong>SIMULATED.</strong> Rows marked simulated come from judges '
        "with planted effects: test data for the statistics, not measurements of a model.</p>"
        if any(m.simulated for m in models)
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{esc(title)}</title><style>{_STYLE}</style>{libs}</head>"
        f'<body id="top"><div id="board-page"><h1>{esc(title)}</h1>{banner}'
        f"<p>{esc(note)} Values: point estimate, below it the 95% interval (face-level "
        "bootstrap; Wilson for the share of significant variations); "
        f"&ldquo;{ALL_EQUAL}&rdquo;: a zero-width interval, every face has the same value. "
        "Click a column to sort; click a model for its page.</p>"
        f'<p class="hint">{len(cols) + 1} columns: the table scrolls sideways inside its frame '
        "(the model column stays in place).</p>"
        f'<div class="frame"><table id="board"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
        f'<div class="plots">{plot_divs}</div></div>{"".join(pages)}{plot_json}'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def leaderboard_models(
    tables: Mapping[str, pd.DataFrame],
    labels: Sequence[str],
    simulated: Mapping[str, bool],
    alpha: float,
    ci: float,
) -> list[LeaderboardModel]:
    """The rows, in the tables' model order."""
    return [
        LeaderboardModel(
            label,
            bool(simulated.get(label, False)),
            tuple(model_headline(tables, label, alpha, ci)),
        )
        for label in labels
    ]


def write_leaderboard(
    models: Sequence[LeaderboardModel],
    out: Path,
    root: Path,
    scenarios: pd.DataFrame | None = None,
    note: str = "",
) -> Path:
    """Write ``out`` (atomically) with the builds vendored under ``root/.dvc/plots``."""
    page = render(models, vendored_builds(root), scenarios, note=note)
    atomic_write_text(out, page)
    log.info("wrote %s (%d models, %.0f kB)", out, len(models), len(page.encode()) / 1e3)
    return out
