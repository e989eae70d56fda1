"""The report stage of a StylisticBias protocol (the family's ``report`` hook): figures,
leaderboard and ``reports/README.md`` from the shared report machinery
(:mod:`stylisticbias.report`); its ``track`` hook is :mod:`.track`."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pandas as pd

from stylisticbias.benchmark import Benchmark
from stylisticbias.outputs import atomic_dir, atomic_write_text
from stylisticbias.report.findings import findings, short_findings
from stylisticbias.report.inputs import load_inputs
from stylisticbias.report.markdown import build_markdown, md_escape
from stylisticbias.report.paper_compare import REFERENCE_DIR, compare
from stylisticbias.report.run import render_figures, scenarios_frame, write_report_leaderboard
from stylisticbias.spec import Config

log = logging.getLogger(__name__)


def report_shift(config: Config, benchmark: Benchmark, root: Path) -> None:
    """The StylisticBias report: figures, leaderboard, ``reports/README.md``."""
    inputs = load_inputs(config, root, benchmark)
    share = inputs.analysis.pareto_share
    alpha = inputs.analysis.alpha
    scen = scenarios_frame(benchmark)
    reports = root / str(config.paths.reports)
    final = reports / "figures"
    with atomic_dir(final) as fig_tmp, atomic_dir(reports / "plots") as plots_tmp:
        drawn = render_figures(inputs, scen, fig_tmp, share, plots_tmp)
        # the README names the figures where they will be once swapped in
        figs = [dataclasses.replace(f, path=final / f.path.name) for f in drawn]
        cmp = compare(inputs.tables, root / REFERENCE_DIR, scen, share)
        headline = root / REFERENCE_DIR / "headline_numbers.csv"
        reference = pd.read_csv(headline) if headline.exists() else None
        found = [
            md_escape(f)
            for f in findings(
                inputs.tables,
                scen,
                share,
                reference=reference,
                large_shift=inputs.analysis.large_shift,
                alpha=alpha,
                ci=inputs.analysis.ci,
            )
        ]
        short = short_findings(inputs.tables, scen, share, reference, alpha, inputs.analysis.ci)
        md = build_markdown(inputs, figs, found, cmp, alpha, reports, [md_escape(f) for f in short])
    write_report_leaderboard(inputs, reports)
    readme = reports / "README.md"
    atomic_write_text(readme, md)
    log.info("wrote %s", readme)
