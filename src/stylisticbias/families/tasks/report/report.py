"""The report of a task protocol (REFLECT, VIGNETTE): ``reports/README.md`` from the analyze
stage's task tables section (``reports/tables/task_report.md``) and the calibration of the
simulated judges' records (``reports/calibration.json``), with a headline per model
(:func:`~.track.task_headline`) and the protocol's figures (:mod:`.figures`: REFLECT's
win-rate heatmap and MCQ option distributions, VIGNETTE's log-odds heat map) in
``reports/figures/``. No leaderboard: ``reports/plots/`` and ``reports/leaderboard/`` are left
empty."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.report.figures import render_task_figures
from stylisticbias.families.tasks.report.track import read_task_tables, task_headline
from stylisticbias.outputs import atomic_dir, atomic_write_text

log = logging.getLogger(__name__)


def calibration_lines(cal: dict) -> list[str]:
    """The calibration summary: per simulated model, tasks tested and rejected."""
    models = cal.get("models") or {}
    if not models:
        return ["No simulated judge among the models: nothing to calibrate.", ""]
    lines = [
        "| model | tasks tested | free-number tasks | rejected | alpha | min p |",
        "|---|---|---|---|---|---|",
    ]
    for m, r in models.items():
        minp = "" if r["min_pval"] is None else f"{r['min_pval']:.3g}"
        lines.append(
            f"| {m} | {r['n_tasks_tested']} | {r['n_tasks_free_number']} | "
            f"{r['n_rejected']} | {r['alpha']} | {minp} |"
        )
    return [*lines, ""]


def build_task_report(benchmark: Benchmark, reports: Path) -> Path:
    """Write ``reports/README.md`` for a task protocol; returns its path."""
    section = reports / "tables" / "task_report.md"
    cal_path = reports / "calibration.json"
    if not section.is_file():
        raise StylisticBiasError(f"{section}: not found; it is written by the `analyze` stage")
    # optional, as in the default report: a sweep job runs no calibrate stage
    cal = json.loads(cal_path.read_text(encoding="utf-8")) if cal_path.is_file() else None
    tables = read_task_tables(reports / "tables")
    models = sorted({m for df in tables.values() for m in df["model"]})
    final = reports / "figures"
    with atomic_dir(final) as fig_tmp:
        figs = [final / p.name for p in render_task_figures(reports / "tables", fig_tmp)]
    lines = [f"# {benchmark.name}: task protocol report", "", "## Headline", ""]
    if any(bool(df["simulated"].any()) for df in tables.values()):
        lines += [
            "*Simulated judge (planted effects): a pipeline check, not a finding about "
            "any model.* Intervals: 95% BCa bootstrap over the sampling unit.",
            "",
        ]
    for m in models:
        lines += task_headline(tables, m)
    lines += ["", "## Figures", ""]
    lines += [f"![{p.stem}](figures/{p.name})" for p in figs] or ["No figure for these tables."]
    lines += [
        "",
        "Tables: `reports/tables/*.csv` (all rows); below, the first rows of each.",
        "",
        "## Calibration: the simulated judges' answers against their exact distributions",
        "",
        "Pearson test per task (conservative; `reports/calibration.json`).",
        "",
    ]
    lines += (
        calibration_lines(cal)
        if cal is not None
        else ["Not calibrated: `reports/calibration.json` is written by the `calibrate` stage.", ""]
    )
    md = "\n".join(lines) + "\n" + section.read_text(encoding="utf-8")
    for d in ("plots", "leaderboard"):
        (reports / d).mkdir(parents=True, exist_ok=True)
    readme = reports / "README.md"
    atomic_write_text(readme, md)
    log.info("wrote %s", readme)
    return readme
