"""The report and track stages of a task protocol (the family's ``report`` and ``track``
hooks): its tables' figures and markdown, and one MLflow run per model."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from stylisticbias.benchmark import Benchmark
from stylisticbias.families.tasks.report.mlflow_runs import log_task_report
from stylisticbias.families.tasks.report.report import build_task_report
from stylisticbias.spec import Config
from stylisticbias.tracking import tracking_spec


def report_tasks(config: Config, benchmark: Benchmark, root: Path) -> None:
    """A task protocol's report: its tables' figures and markdown."""
    build_task_report(benchmark, root / str(config.paths.reports))


def log_task_runs(
    config: Config, root: Path, benchmark: Benchmark, digest: str, run_log: dict[str, Any]
) -> None:
    """Log a task protocol's report (one run per model) into ``run_log``."""
    spec = tracking_spec({"tracking": asdict(config.tracking)})
    run_log["runs"] = log_task_report(config, root / str(config.paths.reports), digest)
    run_log["tracking_uri"] = spec.tracking_uri  # the UI's addresses: report.track._ui_urls
