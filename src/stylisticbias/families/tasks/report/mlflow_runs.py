"""A task protocol's report in MLflow (REFLECT, VIGNETTE), whatever engine judged each model.

The conventions of :mod:`stylisticbias.report.mlflow_log`, applied to the task tables:

* **Per-model run** (``run_kind=model``), one per judged model -- simulated, ``hf`` or
  ``openai`` alike: the model's headline (:func:`task_headline_metrics`: the same metric keys
  in every run of a protocol, each estimate with ``.ci_low`` / ``.ci_high``; at most
  :data:`~stylisticbias.report.mlflow_log.MAX_RUN_METRICS`); every interval and test of its
  tables (:func:`~stylisticbias.families.tasks.analysis.metrics.task_metrics`) in the logged table
  ``tables/metrics_all.json``; its rows of every task table the analyze stage wrote (the same
  artifact names in every model run, empty where the model has none); its own figures
  (``figures/<name>.png``, drawn from its rows by :data:`~.figures.TASK_FIGURES`).
* **Comparison run** (``run_kind=comparison``): ``reports/README.md``, the report's figures
  (every model), ``reports/calibration.json`` when the calibrate stage ran, every task table
  (all models) and ``n_models``.

Params: the composed settings that tell runs apart (:func:`task_run_params`). Tags: ``model``,
``simulated``, ``protocol``, ``engine``, the report id and digest, ``git_commit`` and, under
DVC, ``dvc.exp_name``. A rerun with the same report replaces its earlier runs
(``stylisticbias.run_key``). Sweeps: a sweep job's stages nest under the job's run
(``$STYLISTICBIAS_PARENT_RUN_ID``); a queued ``dvc exp run`` under its baseline's parent run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.analysis.calibration import is_simulated
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.analysis.metrics import finite, task_metrics
from stylisticbias.families.tasks.report.figures import TASK_FIGURES
from stylisticbias.families.tasks.report.track import read_task_tables
from stylisticbias.report.mlflow_log import (
    ALL_METRICS_TABLE,
    MAX_RUN_METRICS,
    TAG_DIGEST,
    TAG_KEY,
    TAG_REPORT,
    run_key,
)
from stylisticbias.report.mlflow_params import generator_option
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

#: The headline of a model run: (metric, table, estimate column, pick, with its interval).
#: ``pick``: ``max`` / ``min`` of the estimate, or ``max_abs`` (the signed estimate of largest
#: magnitude) over the model's rows. A table the protocol has no rows of is left out, so every
#: run of one protocol carries the same keys. 30 metrics when every table is there.
HEADLINE: tuple[tuple[str, str, str, str, bool], ...] = (
    ("win_rate.max", "reflect_win_rates", "win_rate", "max", True),
    ("win_rate.min", "reflect_win_rates", "win_rate", "min", True),
    ("swap_inconsistent_rate.max", "reflect_win_rates", "inconsistent_rate", "max", False),
    ("mcq_gap.max_abs", "reflect_mcq_gaps", "relative_mean_gap", "max_abs", True),
    ("mcq_jsd.max", "reflect_mcq_gaps", "jsd", "max", False),
    ("salary_gap_pct.max_abs", "reflect_salary_gaps", "gap_pct", "max_abs", True),
    ("salary_test_pval.min", "reflect_salary_tests", "pval", "min", False),
    ("position_bias.max_abs", "position_bias", "position_bias", "max_abs", True),
    ("selection_frequency.max", "vignette_selection", "selection_frequency", "max", True),
    ("selection_frequency.min", "vignette_selection", "selection_frequency", "min", True),
    ("log_odds.max_abs", "vignette_log_odds", "log_odds", "max_abs", True),
    ("pair_comp.max_abs", "vignette_pair_comp", "pair_comp", "max_abs", False),
    ("polarity.max_abs", "vignette_polarity", "polarity", "max_abs", False),
    ("text_vs_image_delta.max_abs", "vignette_text_vs_image", "delta", "max_abs", False),
)

_PICK: dict[str, Callable[[pd.Series], Any]] = {
    "max": lambda s: s.idxmax(),
    "min": lambda s: s.idxmin(),
    "max_abs": lambda s: s.abs().idxmax(),
}


def task_headline_metrics(tables: Mapping[str, pd.DataFrame], model: str) -> dict[str, float]:
    """The run page's metrics of ``model``: :data:`HEADLINE` over its rows, each estimate with
    the interval of the row it was picked from (``<metric>.ci_low`` / ``.ci_high``)."""
    out: dict[str, float] = {}
    for metric, table, col, pick, ci in HEADLINE:
        df = tables.get(table)
        if df is None or col not in df.columns:
            continue
        rows = df[(df["model"].astype(str) == model) & df[col].notna()]
        if rows.empty:
            continue
        row = rows.loc[_PICK[pick](rows[col].astype(float))]
        out[metric] = float(row[col])
        if ci:
            for bound in ("ci_low", "ci_high"):
                v = finite(row.get(bound))
                if v is not None:
                    out[f"{metric}.{bound}"] = v
    if len(out) > MAX_RUN_METRICS:  # a headline grown past the run page's budget
        raise StylisticBiasError(
            f"{len(out)} headline metrics for {model}; at most {MAX_RUN_METRICS} fit a run page "
            "(stylisticbias.families.tasks.report.mlflow_runs.HEADLINE)"
        )
    return out


def task_run_params(config: Config) -> dict[str, Any]:
    """The params every task report run logs (what differs between the members of a sweep)."""
    judge, analysis = asdict(config.judge), asdict(config.analysis)
    return {
        "protocol": config.protocol,
        "seed": config.seed,
        "faces.n": config.faces.n,
        "models": list(config.model_names),
        "judge.tasks": judge.get("scenarios"),
        "judge.seeds": judge.get("seeds"),
        "judge.temperature": judge.get("temperature"),
        "generator": generator_option(_section(config.generator)),
        "analysis": {k: v for k, v in analysis.items() if k not in ("group_abbrev", "workers")},
    }


def _section(spec: Any) -> dict[str, Any]:
    """A spec (or the mapping a plug-in generator keeps) as a mapping."""
    return asdict(spec) if is_dataclass(spec) and not isinstance(spec, type) else dict(spec or {})


def _model_tables(tables: Mapping[str, pd.DataFrame], model: str) -> None:
    import mlflow

    for name, df in sorted(tables.items()):
        rows = df[df["model"].astype(str) == model].reset_index(drop=True)
        mlflow.log_table(rows, f"tables/{name}.json")


def _model_figures(tables: Mapping[str, pd.DataFrame], model: str) -> None:
    import matplotlib.pyplot as plt
    import mlflow

    for name, (table, build) in sorted(TASK_FIGURES.items()):
        df = tables.get(table)
        rows = df[df["model"].astype(str) == model] if df is not None else None
        if rows is not None and not rows.empty:
            fig = build(rows.reset_index(drop=True))
            mlflow.log_figure(fig, f"figures/{name}")
            plt.close(fig)


def _log_all(metrics: Mapping[str, float]) -> None:
    import mlflow

    keys = sorted(metrics)
    mlflow.log_table(pd.DataFrame({"metric": keys, "value": [metrics[k] for k in keys]}),
                     ALL_METRICS_TABLE)  # fmt: skip


def log_task_report(config: Config, reports: Path, report_digest: str = "") -> dict[str, str]:
    """Log a task protocol's report (``reports/``): one run per judged model and a comparison
    run (see the module doc); returns ``{run name: run id}``."""
    from stylisticbias.tracking import bounded, preflight, tracking_spec

    spec = tracking_spec({"tracking": asdict(config.tracking)})
    with bounded(spec):
        preflight(spec)
        return _log_task_report(config, reports, report_digest)


def _log_task_report(config: Config, reports: Path, report_digest: str) -> dict[str, str]:
    import mlflow

    from stylisticbias.tracking import (
        delete_other_runs,
        git_commit,
        log_metrics,
        log_params,
        start_run,
    )
    from stylisticbias.tracking import tracking_spec as spec_of
    from stylisticbias.tracking.grouping import TAG_EXP_NAME, TAG_KIND, dvc_exp_name, sweep_id

    spec = spec_of({"tracking": asdict(config.tracking)})
    tables = read_task_tables(reports / "tables")
    common = task_run_params(config)
    exp_name, sweep = dvc_exp_name(), sweep_id()
    base_tags: dict[str, Any] = {TAG_REPORT: uuid.uuid4().hex[:12], TAG_DIGEST: report_digest,
                                 "protocol": config.protocol}  # fmt: skip
    sha = git_commit()
    if sha:
        base_tags["mlflow.source.git.commit"] = sha
    if exp_name:
        base_tags[TAG_EXP_NAME] = exp_name
    suffix = f" @{exp_name}" if exp_name else ""
    key_parts = {"digest": report_digest, "params": common, "sweep": sweep, "exp": exp_name}
    ids: dict[str, str] = {}

    def finished(key: str, run: Any) -> str:
        gone = delete_other_runs(run.info.experiment_id, TAG_KEY, key, run.info.run_id)
        if gone:
            log.info("replaced %d earlier run(s) of the same report: %s", len(gone),
                     ", ".join(gone))  # fmt: skip
        return str(run.info.run_id)

    sims = []
    for m in config.model_names:
        section = _section(config.model(m))
        engine = dict(section.get("engine") or {})
        sim = is_simulated(m, config)
        sims.append(sim)
        key = run_key(kind="model", model=m, **key_parts)
        tags = {**base_tags, TAG_KIND: "model", "model": m, "simulated": sim,
                "engine": engine.get("name"), TAG_KEY: key}  # fmt: skip
        with start_run(spec, run_name=f"{m}{suffix}", tags=tags, sweep=sweep) as run:
            log_params({**common, "model": m, "model.engine": engine.get("name"),
                        "model.decoding": engine.get("decoding"),
                        "model.hub_id": section.get("hub_id")})  # fmt: skip
            log_metrics(task_headline_metrics(tables, m))
            _log_all(task_metrics(tables, m))
            _model_tables(tables, m)
            _model_figures(tables, m)
            ids[m] = finished(key, run)
    key = run_key(kind="comparison", **key_parts)
    tags = {**base_tags, TAG_KIND: "comparison", "model": "all", "simulated": all(sims),
            TAG_KEY: key}  # fmt: skip
    with start_run(spec, run_name=f"comparison{suffix}", tags=tags, sweep=sweep) as run:
        log_params(common)
        log_metrics({"n_models": float(len(config.model_names))})
        for name, df in sorted(tables.items()):
            mlflow.log_table(df.reset_index(drop=True), f"tables/{name}.json")
        for fig in sorted((reports / "figures").glob("*.png")):
            mlflow.log_artifact(str(fig.resolve()), "figures")
        for doc in (reports / "README.md", reports / "calibration.json"):
            if doc.is_file():
                mlflow.log_artifact(str(doc.resolve()))
        ids["comparison"] = finished(key, run)
    log.info("task protocol %s: %d model run(s) + comparison logged", config.protocol,
             len(config.model_names))  # fmt: skip
    return ids
