"""The track stage of a StylisticBias protocol (the family's ``track`` hook): one MLflow run
per model and a comparison run (:mod:`stylisticbias.report.mlflow_log`). The store is checked
before the report's libraries load, so this module imports only what that check needs."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stylisticbias.report.track import _add_interval_tables, written_figures

if TYPE_CHECKING:
    from stylisticbias.benchmark import Benchmark
    from stylisticbias.spec import Config


def log_report_runs(
    config: Config, root: Path, benchmark: Benchmark, digest: str, run_log: dict[str, Any]
) -> None:
    """Log the report's runs (one per model + the comparison) into ``run_log``. The store is
    checked first, in seconds, before the report's libraries (pandas, SciPy, matplotlib) load:
    an unreachable store is one line, soon."""
    from stylisticbias.tracking import bounded, preflight, tracking_spec

    spec = tracking_spec({"tracking": asdict(config.tracking)})
    with bounded(spec):
        preflight(spec)
    from stylisticbias.report.inputs import load_inputs
    from stylisticbias.report.mlflow_log import log_report
    from stylisticbias.report.paper_compare import REFERENCE_DIR, compare
    from stylisticbias.report.run import scenarios_frame

    reports = root / str(config.paths.reports)
    inputs = load_inputs(config, root, benchmark)
    _add_interval_tables(inputs.tables, reports / "tables")
    scen = scenarios_frame(benchmark)
    figs = written_figures(reports / "figures")
    cmp = compare(inputs.tables, root / REFERENCE_DIR, scen, inputs.analysis.pareto_share)
    run_log["runs"] = log_report(config, inputs, figs, cmp, scen, root, report_digest=digest)
    run_log["tracking_uri"] = spec.tracking_uri
