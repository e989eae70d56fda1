"""``reports/README.md``: a report a researcher can read on its own.

Sections: title (``SIMULATED`` whenever any score table is simulated), run settings, headline
findings, figures with captions, the paper's tables in the paper's layout, what this image set
could not estimate and why (only when something was not), the comparison with the paper (when
one of its models was run), calibration, diagnostics and methods.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.report.estimable import not_estimable
from stylisticbias.report.inputs import PAPER_MODELS, ReportInputs, RunSettings
from stylisticbias.report.paper_compare import Comparison
from stylisticbias.report.tables import PAPER_TABLES


@dataclass(frozen=True)
class FigureRecord:
    """One written figure: file, caption, and which MLflow run it belongs to."""

    name: str
    path: Path
    caption: str
    scope: str  # "pooled" | "comparison" | "diagnostic"


#: columns holding p-values (printed ``< 0.001`` below 0.001, never ``0.000``)
P_COLUMNS = frozenset({"pval", "pval_corr", "p", "p_value", "p_corr"})


def format_p(p: float) -> str:
    """A p-value as a reader expects it: ``< 0.001`` below 0.001, else three decimals."""
    if not np.isfinite(p):
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _cell(v: Any, digits: int = 3, pvalue: bool = False) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        if pvalue:
            return format_p(float(v))
        return "–" if not np.isfinite(v) else f"{v:.{digits}f}"
    return md_escape(str(v))


#: what could start an HTML tag or an entity (``<x``, ``</``, ``<!``, ``&name;``, ``&#1;``);
#: the one tag the analysis itself writes, ``<u>`` / ``</u>``, is left alone
_TAG_START = re.compile(r"<(?!/?u>)(?=[A-Za-z/!?])")
_ENTITY = re.compile(r"&(?=#[0-9]+;|#[xX][0-9A-Fa-f]+;|[A-Za-z][A-Za-z0-9]*;)")


def md_escape(text: str) -> str:
    """Text safe in a markdown table cell, without HTML entities: whatever could start a tag or
    an entity is backslash-escaped (``\\<script>``, ``\\&amp;``: model names, values and file
    names may come from user config or imported files), pipes escaped, one line. A plain ``&``
    or ``<`` stays as it is (``Makeup & lips``, ``p < 0.05``); the one tag the analysis itself
    writes, ``<u>`` (not significant, :mod:`stylisticbias.analysis.layout`), is kept."""
    out = _ENTITY.sub("\\\\&", _TAG_START.sub("\\\\<", text))
    return out.replace("|", "\\|").replace("\n", " ")


def md_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub markdown table (no index); p-value columns (:data:`P_COLUMNS`) read
    ``< 0.001`` below 0.001."""
    if df.empty:
        return "_(no rows)_"
    head = "| " + " | ".join(_cell(c) for c in df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    isp = [str(c) in P_COLUMNS for c in df.columns]
    body = [
        "| " + " | ".join(_cell(v, digits, p) for v, p in zip(row, isp)) + " |"
        for row in df.itertuples(index=False)
    ]
    return "\n".join([head, sep, *body])


def settings_section(s: RunSettings) -> str:
    """Run settings: models, engine, sizes, data version.

    No commit, host or time: the report is committed, and a file naming the commit it is in can
    never be clean; the commit goes to MLflow (tags) and the run logs instead.
    """
    models = pd.DataFrame(
        [
            {
                "model (table name)": m.label,
                "config": m.name,
                "hub id": m.hub_id or "–",
                "simulated": m.simulated,
                "score rows": m.n_rows,
            }
            for m in s.models
        ]
    )
    rows = [
        ("engine / decoding", f"{s.engine} / {s.decoding}"),
        ("generator", s.generator),
        *([("images", s.image_source)] if s.image_source else []),
        ("base faces", f"{s.n_faces:,}"),
        (
            "images judged (base + variations)",
            f"{s.n_images:,} ({s.n_variation_images:,} variations)",
        ),
        ("scenarios", str(s.n_scenarios)),
        ("orderings × seeds", f"{list(s.orderings)} × {list(s.seeds)}"),
    ]
    rows += [
        (f"data version `{v.path}`", f"`{v.md5 or '-'}` ({v.source})") for v in s.data_versions
    ]
    kv = pd.DataFrame(rows, columns=["setting", "value"])
    return "## Run settings\n\n" + md_table(models) + "\n\n" + md_table(kv)


def figures_section(figs: Sequence[FigureRecord], base: Path) -> str:
    """Every figure embedded with its caption (paths relative to the README)."""
    out = ["## Figures"]
    for f in figs:
        rel = f.path.relative_to(base).as_posix()
        out.append(f"![{f.name}]({rel})\n\n*{f.caption}*")
    return "\n\n".join(out)


def paper_tables_section(
    wide: dict[str, pd.DataFrame], alpha: float, strong_alpha: float = AnalysisSettings.strong_alpha
) -> str:
    """Tables 2-7, 11, 12 in the paper's layout, as the ``analyze`` stage wrote them (marks at
    ``analysis.strong_alpha`` and ``analysis.alpha``)."""
    out = [
        "## The paper's tables, from this run",
        f"**Bold**: corrected p < {strong_alpha:g}; <u>underlined</u>: not significant "
        f"(corrected p ≥ {alpha}); other values: corrected p < {alpha}; `†`: not tested "
        "(Average rows, Table 4's Y-E gap, cells with too few faces); `-`: not applicable. "
        "Table 7 has no tests. "
        "Tables 3-6 and 12 pool all models (the paper's averages); 2, 7 and 11 are per model. "
        "Long versions with CIs and p-values: `reports/tables/<name>.csv`.",
    ]
    for spec in PAPER_TABLES:
        if spec.wide in wide:
            out.append(f"### {spec.title}\n\n" + md_table(wide[spec.wide]))
    return "\n\n".join(out)


def not_estimable_section(inputs: ReportInputs) -> str:
    """ "Not estimable on this image set": every cell and table the analysis left empty, with
    its reason (:mod:`~stylisticbias.report.estimable`); "" when nothing is missing."""
    gaps = not_estimable(inputs)
    if not gaps:
        return ""
    return (
        "## Not estimable on this image set\n\n"
        "These cells and tables need more data than this image set has (more faces, more "
        "demographic groups, the variations they are about, or more models); they are empty "
        "(`-`) in the tables above and in `reports/tables/`, never filled in.\n\n"
        + md_table(pd.DataFrame(gaps, columns=["not estimable", "why"]))
    )


def comparison_section(cmp: Comparison | None) -> str:
    """Side-by-side with the paper, or why there is none."""
    head = "## Comparison with the paper"
    if cmp is None:
        return (
            f"{head}\n\nNone of the paper's models ({', '.join(PAPER_MODELS)}) was run, so "
            "there is nothing to compare."
        )
    out = [head, f"Paper models in this run: {', '.join(cmp.models)}. `diff` = ours − paper."]
    out += [f"> {n}" for n in cmp.notes]
    if not cmp.claims.empty:
        out.append("### Figure-level numbers\n\n" + md_table(cmp.claims))
    out.append("### Summary per table\n\n" + md_table(cmp.summary))
    for key, g in cmp.cells.groupby("table", sort=False):
        g = g.drop(columns="table")
        if len(g) > 60:
            g = g.reindex(g["diff"].abs().sort_values(ascending=False).index).head(25)
            title = f"### {key}: the 25 largest differences"
        else:
            title = f"### {key}"
        out.append(title + "\n\n" + md_table(g))
    return "\n\n".join(out)


def calibration_section(cal: dict[str, Any] | None) -> str:
    """reports/calibration.json, flattened (coverage, bias, power ...)."""
    head = "## Calibration (planted effects recovered)"
    if not cal:
        return f"{head}\n\nNo `reports/calibration.json` in this run."
    rows = [(k, v) for k, v in _flat(cal).items()]
    return head + "\n\n" + md_table(pd.DataFrame(rows, columns=["quantity", "value"]))


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        elif not isinstance(v, list):
            out[key] = v
    return out


def diagnostics_section(inputs: ReportInputs) -> str:
    """Position/letter bias and invalid rates, as tables."""
    out = ["## Diagnostics"]
    for name, title in (
        ("position_bias", "Position bias (share of answers naming the first option; 0.5 = none)"),
        ("letter_bias", "Letter bias (share answering (a); 0.5 = none)"),
        ("invalid_rates", "Invalid / unparseable answers"),
    ):
        df = inputs.table(name)
        if df is not None and name == "invalid_rates" and "scenario_id" in df:
            df = df.astype({"scenario_id": object})
            df.loc[df["scenario_id"] == 0, "scenario_id"] = "all"  # the pooled row
        out.append(
            f"### {title}\n\n"
            + (
                md_table(df)
                if df is not None
                else f"_`reports/tables/{name}.csv` was not written._"
            )
        )
    return "\n\n".join(out)


#: excluded edits the report lists by id (all are in the QA summary)
MAX_EXCLUDED_LISTED = 20


def qa_section(qa: dict[str, Any] | None) -> str:
    """<paths.qa>/summary.json: the QA checks of the edits and what the policy did."""
    head = "## Quality checks of the edits"
    if not qa:
        return f"{head}\n\nNo QA summary in this run (`dvc repro qa`)."
    rows = [
        (name, c["checked"], c["passed"], c["failed"], c["unknown"], c["pass_share"])
        for name, c in qa["checks"].items()
    ]
    table = pd.DataFrame(
        rows, columns=["check", "checked", "passed", "failed", "unknown", "pass share"]
    )
    n_ex = len(qa["excluded"])
    if qa["policy"] == "exclude":
        shown = ", ".join(f"`{i}`" for i in qa["excluded"][:MAX_EXCLUDED_LISTED])
        more = n_ex - min(n_ex, MAX_EXCLUDED_LISTED)
        policy = (
            f"**Policy: exclude.** {n_ex} of {qa['edits']} edits failed a check and were left "
            "out of judging (every id: `excluded` in `data/qa/summary.json`)"
            + (f": {shown}{f' and {more} more' if more else ''}." if n_ex else ".")
        )
    else:
        policy = (
            f"**Policy: report only.** {qa['failed_any']} of {qa['edits']} edits fail at least "
            "one check; all were judged (`qa.policy=exclude` leaves them out)."
        )
    annotator = qa.get("annotator")
    asked = (
        f"asked of the annotator `{annotator}`"
        if annotator
        else "not asked (`qa.annotator` is null: pixel locality only)"
    )
    out = [
        head,
        policy,
        f"Checks: **locality** — change outside the edit's mask (no model, docs/annotate.md); "
        f"**attribute** and **identity** — {asked}. Unknown: no mask (full-body edits), or an "
        "invalid answer (kept with its reason).",
        md_table(table),
    ]
    per = pd.DataFrame(qa["checks"].get("attribute", {}).get("per_value", []))
    if not per.empty:
        worst = per.sort_values(["pass_share", "attribute", "value"]).head(10)
        worst = worst[["attribute", "value", "checked", "passed", "pass_share"]]
        out.append("### Lowest attribute-check pass shares\n\n" + md_table(worst))
    return "\n\n".join(out)


def generator_audit_section(audit: pd.DataFrame | None) -> str:
    """<paths.qa>/generator_audit.csv: does the generator draw one value differently by group?"""
    head = "## The generator's own bias (audit of the edits)"
    if audit is None or audit.empty:
        return f"{head}\n\nNo generator audit in this run (`dvc repro generator_audit`)."
    sig = audit[audit["significant"]]
    cols = [
        "attribute",
        "value",
        "dimension",
        "group",
        "n_group",
        "bds",
        "group_colour",
        "rest_colour",
        "pval_corr",
    ]
    top = sig.sort_values(["bds", "pval_corr"], ascending=[False, True]).head(10)[cols]
    return "\n\n".join(
        [
            head,
            "Every Δ compares an edit with its base face, so a generator that draws one requested "
            "value differently for different people confounds it. From the pixels each edit "
            "changed (no model): its dominant colour and its extent; per value and demographic "
            "group, BDS of the group against the value's other edits with a permutation test, "
            f"Benjamini–Hochberg over all {len(audit)} tests: **{len(sig)} significant**. The "
            "largest (`data/qa/generator_audit.csv` has every test; docs/soda.md):",
            md_table(top) if len(top) else "_None significant._",
        ]
    )


#: The released code's analyses (analysis/official_analyses/): table, title, note.
OFFICIAL_TABLES: tuple[tuple[str, str, str], ...] = (
    (
        "effect_sizes",
        "Partial η² (variation/scenario category: nested OLS on face × category means; "
        "demographics: one-way OLS on face means)",
        "Category factors' test: face-clustered Wald F (`model_kind` mixed_cluster_wald; "
        "`official`: the released nested-OLS F). CIs: face bootstrap (percentile), lower end 0 "
        "where the row's test does not reject (`official`: plain percentile).",
    ),
    (
        "mixed_model",
        "Mixed model of Δ: `delta ~ C(variation_category) + C(scenario_category) + (1 | face)`",
        "`r2_marginal`: Nakagawa, var(Xβ) / (var(Xβ) + σ²_face + σ²_resid); "
        "`r2_marginal_released`: the released code's var(fitted − resid), for comparison; "
        "`method` ols: the face variance was estimated at 0 (the OLS fit is that model); "
        "`+cr1_face`: SEs and p face-clustered (CR1, t on faces − 1 df; `official`: model-based).",
    ),
    (
        "negativity_asymmetry",
        "Negativity asymmetry (|Δ| of the negative vs the positive variation of a pair)",
        "One-sided Wilcoxon of |Δ_neg| − |Δ_pos| > 0 per face, BH over the pairs; "
        "ratio = median |Δ_neg| / median |Δ_pos| with a face-bootstrap CI.",
    ),
    (
        "scenario_agreement",
        "Cross-model agreement of the per-scenario SBS",
        "ICC(2,1): two-way random, absolute agreement; ICC(3,1): two-way mixed, consistency "
        '(the released code prints ICC(3,1) as "ICC(2,1)"). Kendall\'s W p: permutation test; '
        "ICC CIs: F intervals (McGraw & Wong); `official`: χ² p and bootstrap over scenarios.",
    ),
    (
        "preference_summary",
        "Absolute-preference screen of the base faces and |Δ| tail rates",
        "A model × scenario cell is flagged when z = |φ̄ − 0.5| / (SD/√n) ≥ 3.29, "
        "|φ̄ − 0.5| ≥ 0.20 and n ≥ 50 (`base_preference.csv` holds the cells).",
    ),
)


def official_section(inputs: ReportInputs) -> str:
    """The released code's analyses that the paper's tables do not show."""
    out = [
        "## Beyond the paper's tables: the released code's analyses\n\n"
        "The paper's public code computes these; here they are registered tables with "
        "intervals (docs/statistics.md)."
    ]
    for name, title, note in OFFICIAL_TABLES:
        df = inputs.table(name)
        body = (
            md_table(df.drop(columns=["simulated"], errors="ignore"))
            if df is not None and not df.empty
            else f"_`reports/tables/{name}.csv` has no rows (it needs two models)._"
        )
        out.append(f"### {title}\n\n{body}\n\n{note}")
    return "\n\n".join(out)


def headline_section(headline: Sequence[str], details: Sequence[str]) -> str:
    """The headline bullets (short: unit, direction, comparison), then the numbers behind
    them; without short bullets, the detailed ones are the headline."""
    bullets = "\n".join(f"- {f}" for f in (headline or details))
    out = f"## Headline findings\n\n{bullets}"
    if headline and details:
        out += "\n\n### The numbers behind them\n\n" + "\n".join(f"- {f}" for f in details)
    return out


def build_markdown(
    inputs: ReportInputs,
    figs: Sequence[FigureRecord],
    findings: list[str],
    cmp: Comparison | None,
    alpha: float,
    base: Path,
    headline: Sequence[str] = (),
) -> str:
    """The whole README (``headline``: the short bullets on top, ``findings`` their detail)."""
    sim = inputs.settings.simulated
    title = "# StylisticBias report" + (" — SIMULATED data" if sim else "")
    parts = [title]
    if sim:
        parts.append(
            "> **SIMULATED.** At least one judge here is the simulated judge with planted "
            "effects: it never looks at the images. These numbers test the pipeline and "
            "the statistics (can they recover what was planted?); they say nothing about "
            "any real model."
        )
    if inputs.settings.image_source:
        parts.append(f"> **Images:** {inputs.settings.image_source}.")
    parts += [
        settings_section(inputs.settings),
        headline_section(headline, findings),
        figures_section(figs, base),
        paper_tables_section(inputs.wide, alpha, inputs.analysis.strong_alpha),
        *filter(None, [not_estimable_section(inputs)]),  # only when something is missing
        comparison_section(cmp),
        calibration_section(inputs.calibration),
        official_section(inputs),
        diagnostics_section(inputs),
        qa_section(inputs.qa),
        generator_audit_section(inputs.generator_audit),
        "## Methods\n\nMetric definitions (φ, Δ, VS, SBS, Cohen's d, zero and large-shift "
        "shares), the tests (Kruskal–Wallis, Mann–Whitney U, Wilcoxon signed-rank), the "
        "multiple-testing correction and the bootstrap CIs are documented in "
        "[docs/statistics.md](../docs/statistics.md); how to browse and compare runs in MLflow "
        "and DVC in [docs/report.md](../docs/report.md). Every table above is in "
        "`reports/tables/` (long format, with `ci_low`, `ci_high`, `pval`, `pval_corr`, `n`).",
    ]
    return "\n\n".join(parts) + "\n"
