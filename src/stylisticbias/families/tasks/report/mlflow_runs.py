"""A task protocol's report in MLflow (REFLECT, VIGNETTE), whatever engine judged each model:
the shared logger :func:`stylisticbias.report.family_runs.log_family_report` with the task
family's :data:`LAYOUT`.

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

from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.families.tasks.analysis.metrics import INTERVAL_TABLES, TEST_TABLES
from stylisticbias.families.tasks.report.figures import TASK_FIGURES
from stylisticbias.families.tasks.report.track import read_task_tables
from stylisticbias.report.family_runs import (
    Flat,
    Headline,
    RunLayout,
    headline_metrics,
    log_family_report,
    run_params,
)
from stylisticbias.spec import Config

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
    ("position_bias.max_abs", "task_position_bias", "position_bias", "max_abs", True),
    ("selection_frequency.max", "vignette_selection", "selection_frequency", "max", True),
    ("selection_frequency.min", "vignette_selection", "selection_frequency", "min", True),
    ("log_odds.max_abs", "vignette_log_odds", "log_odds", "max_abs", True),
    ("pair_comp.max_abs", "vignette_pair_comp", "pair_comp", "max_abs", False),
    ("polarity.max_abs", "vignette_polarity", "polarity", "max_abs", False),
    ("text_vs_image_delta.max_abs", "vignette_text_vs_image", "delta", "max_abs", False),
)


def task_run_params(config: Config) -> dict[str, Any]:
    """The params every task report run logs (what differs between the members of a sweep):
    :func:`~stylisticbias.report.family_runs.run_params`, the judged selection named as the
    task protocols name it (``judge.tasks``)."""
    return {
        ("judge.tasks" if k == "judge.scenarios" else k): v for k, v in run_params(config).items()
    }


#: what a task protocol logs (:class:`~stylisticbias.report.family_runs.RunLayout`)
LAYOUT = RunLayout(
    family="tasks",
    headline=tuple(
        Headline(metric, table, col, pick, "ci_low" if ci else None, "ci_high" if ci else None)
        for metric, table, col, pick, ci in HEADLINE
    ),
    flat=tuple(Flat(t, col, keys) for t, (col, keys) in {**INTERVAL_TABLES, **TEST_TABLES}.items()),
    read_tables=read_task_tables,
    model_figures=TASK_FIGURES,
    params=task_run_params,
)


def task_headline_metrics(tables: dict[str, pd.DataFrame], model: str) -> dict[str, float]:
    """The run page's metrics of ``model``: :data:`HEADLINE` over its rows, each estimate with
    the interval of the row it was picked from (``<metric>.ci_low`` / ``.ci_high``)."""
    return headline_metrics(tables, model, LAYOUT.headline)


def log_task_report(config: Config, reports: Path, report_digest: str = "") -> dict[str, str]:
    """Log a task protocol's report (``reports/``): one run per judged model and a comparison
    run (see the module doc); returns ``{run name: run id}``."""
    return log_family_report(config, reports, LAYOUT, report_digest)
