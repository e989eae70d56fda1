"""The analyze and calibrate stages of a task protocol (the family's ``analyze`` and
``calibrate`` hooks): every model's task tables from its task records, and each simulated
judge's records against their exact distributions."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.analysis.calibration import is_simulated
from stylisticbias.analysis.headline import METRICS_ALL
from stylisticbias.analysis.run import write_csv
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.streaming import StreamStats
from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.analysis.metrics import task_metrics
from stylisticbias.families.tasks.analysis.records import (
    task_fit,
    task_markdown,
    task_tables_from_records,
)
from stylisticbias.families.tasks.analysis.tables import validate_task_table
from stylisticbias.forked import ordered_map
from stylisticbias.judge.protocol.tasks.records import RECORDS_FILE, read_task_records
from stylisticbias.outputs import atomic_path
from stylisticbias.spec import Config

log = logging.getLogger(__name__)


def analyze_tasks(
    config: Config,
    benchmark: Benchmark,
    s: AnalysisSettings,
    models: Sequence[str],
    t0: float = 0.0,
) -> StreamStats:
    """A task protocol's analysis: the task tables (:func:`write_task_report`)."""
    judg_dir = Path(config.paths.judgments)
    write_task_report(models, benchmark, judg_dir, Path(config.paths.reports), config, s)
    if config.paths.analysis_cache:  # the stage's output: no per-model summaries to keep
        Path(config.paths.analysis_cache).mkdir(parents=True, exist_ok=True)
    return StreamStats(computed=tuple(models), cached=())


def write_task_report(
    models: Sequence[str],
    benchmark: Benchmark,
    judg_dir: Path,
    reports: Path,
    config: Config,
    s: AnalysisSettings,
) -> None:
    """A task protocol's analysis: every model's task tables (stacked over models) ->
    ``reports/tables/<table>.csv``, their markdown -> ``reports/tables/task_report.md``,
    table sizes and each model's intervals and tests (:func:`.metrics.task_metrics`) ->
    ``reports/metrics.json`` (and ``metrics_all.json``)."""
    parts: dict[str, list[pd.DataFrame]] = {}

    def model_tables(m: str) -> dict[str, pd.DataFrame]:
        return task_tables_from_records(
            read_task_records(judg_dir / m / RECORDS_FILE),
            benchmark,
            m,
            n_boot=s.n_resamples,
            seed=s.seed,
            simulated=is_simulated(m, config),
            paper_tests=s.official,
        )

    # models at once in s.workers forked processes; the tables do not depend on where
    for tabs in ordered_map(model_tables, list(models), s.workers):
        for name, df in tabs.items():
            parts.setdefault(name, []).append(df)
    tables = {n: pd.concat(d, ignore_index=True) for n, d in parts.items()}
    out = reports / "tables"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name, df in tables.items():
        write_csv(validate_task_table(name, df), out / f"{name}.csv")
    md = out / "task_report.md"
    with atomic_path(md) as tmp:
        tmp.write_text(task_markdown(tables, benchmark), encoding="utf-8")
    metrics = {
        "protocol": benchmark.name,
        "models": list(models),
        "tables": {n: len(df) for n, df in sorted(tables.items())},
    }
    for m in models:  # every interval and test per model (MLflow and sweeps read these)
        metrics[m] = task_metrics(tables, m)
    for name in (METRICS_ALL, "metrics.json"):  # every number and the headline: the same
        with atomic_path(reports / name) as tmp:
            tmp.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    log.info("task protocol %s: %d tables -> %s", benchmark.name, len(tables), out)


def task_calibration_json(config: Config) -> dict[str, Any]:
    """``reports/calibration.json`` of a task protocol: per simulated model,
    :func:`~stylisticbias.families.tasks.analysis.records.task_fit` of its task scores."""
    names = [m for m in config.model_names if is_simulated(m, config)]
    out: dict[str, Any] = {"protocol": config.protocol, "simulated": bool(names), "models": {}}
    for m in names:
        path = Path(config.paths.scores) / f"model={m}" / "part-0.parquet"
        if not path.is_file():
            raise StylisticBiasError(f"{path}: no task scores (run the scores stage first)")
        out["models"][m] = task_fit(pd.read_parquet(path))
    return out


def calibrate_tasks(config: Config, synthetic: int | None = None) -> dict[str, Any]:
    """A task protocol: its records against their exact distributions."""
    return task_calibration_json(config)
