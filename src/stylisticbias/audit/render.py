"""The audit's pages: a bias card per model, the cross-protocol leaderboard (CSV, a markdown
table, a static HTML page) and the README. Pure functions of an :class:`~.collect.Audit`:
the same audit gives the same bytes."""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Mapping
from typing import Any

from stylisticbias.audit.collect import Audit, ProtocolAudit, SodaAudit
from stylisticbias.report.audit_findings import Finding, interval_text, rounded, value_text
from stylisticbias.report.leaderboard import PAGE_CSP, PAGE_STYLE, SORT_SCRIPT
from stylisticbias.report.markdown import md_escape

SIMULATED_NOTE = (
    "SIMULATED: this judge answers from planted effects (conf/planted/); its numbers test the "
    "statistics, they are not measurements of a model."
)
#: the columns of ``leaderboard.csv`` (one row per model x protocol)
CSV_COLUMNS = (
    "model",
    "simulated",
    "protocol",
    "metric",
    "label",
    "unit",
    "value",
    "ci_low",
    "ci_high",
)


def _cell_text(f: Finding | None, level: float) -> str:
    if f is None:
        return "–"
    ci = interval_text(f.ci_low, f.ci_high, f.unit, level)
    return f"{value_text(f.value, f.unit)} ({ci})" if ci else value_text(f.value, f.unit)


def _column(p: ProtocolAudit) -> str:
    """A protocol's leaderboard header: its title and its headline's label and unit."""
    labels = dict.fromkeys(f.label for f in p.findings if f.headline)
    return f"{p.title}: {' / '.join(labels) or 'no headline'}"


def card(audit: Audit, model: str) -> str:
    """``<model>.md``: the model's bias card."""
    sim = audit.simulated.get(model, False)
    lines = [f"# Bias card: {md_escape(model)}" + (" (SIMULATED judge)" if sim else ""), ""]
    if sim:
        lines += [f"> **{SIMULATED_NOTE}**", ""]
    lines += [
        f"What {len(audit.protocols)} protocol(s) found about `{model}`: per protocol what it "
        f"measures and its headline findings, each with its {audit.level:.0%} interval and its "
        "unit. The leaderboard of every model: [README.md](README.md#leaderboard).",
        "",
    ]
    for p in audit.protocols:
        lines += [f"## {md_escape(p.title)}", "", f"*What it measures:* {p.measures}", ""]
        lines += [f"*Paper:* {p.paper}", ""]
        found = p.of(model)
        if not found:
            lines += ["- No finding: the protocol's tables have no rows of this model.", ""]
        for f in found:
            mark = " (leaderboard)" if f.headline else ""
            lines.append(f"- **{md_escape(f.label)}**{mark}: {f.text}")
        lines += ["", f"The whole report: [{p.name}]({p.report}).", ""]
    return "\n".join(lines).rstrip() + "\n"


def leaderboard_csv(audit: Audit) -> str:
    """``leaderboard.csv``: one row per model x protocol, the protocol's headline number with
    its interval (empty cells where the protocol has none)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for m in audit.models:
        for p in audit.protocols:
            f = p.headline(m)
            nums = [rounded(f.value), rounded(f.ci_low), rounded(f.ci_high)] if f else [None] * 3
            meta = [f.key, f.label, f.unit] if f else ["", "", ""]
            w.writerow(
                [m, str(audit.simulated.get(m, False)).lower(), p.name, *meta]
                + ["" if v is None else repr(v) for v in nums]
            )
    return buf.getvalue()


def leaderboard_md(audit: Audit) -> str:
    """The leaderboard as a markdown table (the README's section)."""
    head = ["model", *(_column(p) for p in audit.protocols)]
    rows = [
        "| " + " | ".join(md_escape(h) for h in head) + " |",
        "|" + "---|" * len(head),
    ]
    for m in audit.models:
        name = f"[{md_escape(m)}]({m}.md)" + (" (SIMULATED)" if audit.simulated.get(m) else "")
        cells = [_cell_text(p.headline(m), audit.level) for p in audit.protocols]
        rows.append("| " + " | ".join([name, *cells]) + " |")
    return "\n".join(rows) + "\n"


def _html_cell(f: Finding | None, level: float) -> str:
    if f is None:
        return '<td data-v="">&ndash;</td>'
    ci = interval_text(f.ci_low, f.ci_high, f.unit, level)
    ci_html = f'<span class="ci">{html.escape(ci)}</span>' if ci else ""
    return f'<td data-v="{f.value!r}">{html.escape(value_text(f.value, f.unit))}{ci_html}</td>'


def leaderboard_html(audit: Audit) -> str:
    """``leaderboard.html``: the leaderboard as one self-contained page (the static
    leaderboard's style and sorting, :mod:`stylisticbias.report.leaderboard`); no script
    library, no network request."""
    esc = html.escape
    head = '<th scope="col" data-key="model">model</th>' + "".join(
        f'<th scope="col" data-key="{esc(p.name)}">{esc(p.title)}'
        f'<span class="ci">{esc(_column(p).split(": ", 1)[1])}</span></th>'
        for p in audit.protocols
    )
    body = []
    for m in audit.models:
        sim = " <small>(SIMULATED)</small>" if audit.simulated.get(m) else ""
        cells = "".join(_html_cell(p.headline(m), audit.level) for p in audit.protocols)
        link = f'<a href="{esc(m)}.md">{esc(m)}</a>{sim}'
        body.append(f'<tr><td data-v="{esc(m)}">{link}</td>{cells}</tr>')
    banner = (
        f'<p class="banner"><strong>SIMULATED.</strong> {esc(SIMULATED_NOTE[11:])}</p>'
        if any(audit.simulated.values())
        else ""
    )
    measures = "".join(
        f"<li><strong>{esc(p.title)}</strong>: {esc(p.measures)} "
        f'(<a href="{esc(p.report)}">report</a>)</li>'
        for p in audit.protocols
    )
    title = "Bias audit: models x protocols"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{PAGE_CSP}">'
        f"<title>{esc(title)}</title><style>{PAGE_STYLE}</style></head>"
        f'<body id="top"><div id="board-page"><h1>{esc(title)}</h1>{banner}'
        "<p>Each cell: the protocol's headline number for the model, below it its "
        f"{audit.level:.0%} interval. Click a column to sort; click a model for its bias "
        "card.</p>"
        f'<div class="frame"><table id="board"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
        f"<h2>What each protocol measures</h2><ul>{measures}</ul></div>"
        f"<script>{SORT_SCRIPT}</script></body></html>\n"
    )


def _soda_section(soda: SodaAudit, level: float) -> list[str]:
    names = {
        "bds": "BDS: divergence of attribute distributions between groups, mean over objects",
        "cds": "CDS: divergence from the neutral prompt's distribution, mean over objects",
        "vac": "VAC: attribute variation across prompt conditions, mean over objects",
        "significant_share": "share of group tests with p < soda.alpha",
    }
    lines = [f"### {md_escape(soda.title)}", "", f"*What it measures:* {soda.measures}", ""]
    lines += [f"*Paper:* {soda.paper}", ""]
    if soda.simulated:
        lines += ["> **SIMULATED: the stand-in generator draws planted distributions.**", ""]
    lines += ["| number | value | interval |", "|---|---|---|"]
    for key, what in names.items():
        v = soda.headline.get(key)
        if v is None:
            continue
        lo, hi = soda.headline.get(f"{key}.ci_low"), soda.headline.get(f"{key}.ci_high")
        ci = f"[{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else ""
        lines.append(f"| {what} | {v:.3f} | {ci} |")
    lines += [
        "",
        f"Intervals: {level:.0%}, over objects (Student t; VAC skewness-corrected; the share: "
        f"Wilson on the effective number of tests). Its tables and README: `{soda.where}/` (a "
        "DVC output; docs/soda.md).",
        "",
    ]
    return lines


def readme(audit: Audit) -> str:
    """``README.md`` of the audit."""
    sim = any(audit.simulated.values())
    lines = ["# Bias audit" + (": SIMULATED data" if sim else ""), ""]
    if sim:
        lines += [f"> **{SIMULATED_NOTE}**", ""]
    lines += [
        "## How to read the audit",
        "",
        "- Each judged model has a **bias card** (below): per protocol, what the protocol "
        "measures and its headline findings in plain words -- the direction, the size in its "
        f"unit and the {audit.level:.0%} interval.",
        "- The **leaderboard** puts the models side by side: one column per protocol, each "
        "cell that protocol's headline number. The columns measure different things in "
        "different units; compare models within a column, not across columns.",
        "- An interval that excludes the no-bias value (0, or 50% for a pairwise win rate) "
        "is a difference the data resolve; one that includes it is not.",
        "- A model marked SIMULATED is a judge with planted effects: its numbers check that "
        "the statistics recover what was planted, they say nothing of a real model.",
        "- Every number comes from the protocol's own report (linked); its tables hold every "
        "estimate with its interval and test.",
        "",
        "## Leaderboard",
        "",
        leaderboard_md(audit).rstrip(),
        "",
        "The same as a table: [leaderboard.csv](leaderboard.csv); as a page: "
        "[leaderboard.html](leaderboard.html).",
        "",
        "## Bias cards",
        "",
    ]
    for m in audit.models:
        mark = " (SIMULATED)" if audit.simulated.get(m) else ""
        lines.append(f"- [{md_escape(m)}]({m}.md){mark}")
    lines += ["", "## Protocols", "", "| protocol | what it measures | paper | report |"]
    lines.append("|---|---|---|---|")
    for p in audit.protocols:
        lines.append(
            f"| {md_escape(p.title)} | {md_escape(p.measures)} | {md_escape(p.paper)} | "
            f"[{p.name}]({p.report}) |"
        )
    lines += ["", "## The generator audit (SODA)", ""]
    if not audit.soda:
        lines += ["Not run in this experiment (add `soda` to `protocols=[...]`).", ""]
    for s in audit.soda:
        lines += _soda_section(s, audit.level)
    return "\n".join(lines).rstrip() + "\n"


def findings_json(audit: Audit) -> str:
    """``findings.json``: every finding per model and protocol (what MLflow's model runs log as
    ``headline.json``), the protocols' descriptions and the leaderboard's cells."""
    out: dict[str, Any] = {
        "level": audit.level,
        "protocols": {
            p.name: {"title": p.title, "paper": p.paper, "measures": p.measures, "report": p.report}
            for p in audit.protocols
        },
        "models": {
            m: {
                "simulated": bool(audit.simulated.get(m, False)),
                "protocols": {p.name: [f.as_dict() for f in p.of(m)] for p in audit.protocols},
            }
            for m in audit.models
        },
    }
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def pages(audit: Audit) -> Mapping[str, str]:
    """Every file of the audit directory: ``{file name: text}``."""
    out = {f"{m}.md": card(audit, m) for m in audit.models}
    out |= {
        "README.md": readme(audit),
        "leaderboard.csv": leaderboard_csv(audit),
        "leaderboard.html": leaderboard_html(audit),
        "findings.json": findings_json(audit),
    }
    return out
