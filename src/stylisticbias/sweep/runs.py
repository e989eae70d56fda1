"""The sweep's MLflow runs: one parent, one child per job, one comparison listing every job.

Every call goes through :mod:`stylisticbias.tracking` (store preflight, bounded retries and
timeouts, one-line :class:`~stylisticbias.tracking.TrackingError`; artifacts relative to a
SQLite store). Runs are created with :class:`mlflow.MlflowClient` by id, so a job's child run
stays open while the job's stage subprocesses create their runs under it
(``$STYLISTICBIAS_PARENT_RUN_ID``).
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from stylisticbias.spec.sections import TrackingSpec
from stylisticbias.tracking import (
    bounded,
    ensure_experiment,
    git_commit,
    in_store_dir,
    preflight,
)

log = logging.getLogger(__name__)

#: the tag keys of :mod:`stylisticbias.report.mlflow_log` (same vocabulary for sweep runs)
TAG_SWEEP = "stylisticbias.sweep_id"
TAG_KIND = "stylisticbias.run_kind"
#: headline metrics the comparison run logs per job (``<job>/<metric>``): the keys of the job's
#: ``reports/metrics.json`` (:func:`stylisticbias.analysis.headline.dvc_headline`, one judged
#: model per job); all go to its table
HEADLINE = ("sbs", "sbs_ci_low", "sbs_ci_high", "significant_share", "invalid_rate")


@contextlib.contextmanager
def store(spec: TrackingSpec) -> Iterator[Any]:
    """An :class:`mlflow.MlflowClient` on the checked store, working from the store's directory;
    yields ``(client, experiment_id)``."""
    import mlflow

    with bounded(spec):
        preflight(spec)
        exp_id = ensure_experiment(spec)
        with in_store_dir(spec):
            yield mlflow.MlflowClient(spec.tracking_uri), exp_id


def _tags(kind: str, sweep_id: str, extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    tags = {TAG_KIND: kind, TAG_SWEEP: sweep_id}
    commit = git_commit()
    if commit:
        tags["git_commit"] = commit
    tags.update(
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (extra or {}).items()}
    )
    return tags


def run_is_live(spec: TrackingSpec, run_id: str | None) -> bool:
    """Whether ``run_id`` exists in the store and is not deleted."""
    if not run_id:
        return False
    from mlflow.exceptions import MlflowException

    with store(spec) as (client, _):
        try:
            return bool(client.get_run(run_id).info.lifecycle_stage == "active")
        except MlflowException:
            return False


def open_run(
    spec: TrackingSpec,
    name: str,
    kind: str,
    sweep_id: str,
    parent: str | None = None,
    tags: Mapping[str, Any] | None = None,
    reuse: str | None = None,
) -> str:
    """Create a run (child of ``parent`` when given), or reopen ``reuse`` if it is live."""
    if reuse and run_is_live(spec, reuse):
        with store(spec) as (client, _):
            client.update_run(reuse, status="RUNNING")
        return reuse
    all_tags = _tags(kind, sweep_id, tags)
    if parent:
        all_tags["mlflow.parentRunId"] = parent
    with store(spec) as (client, exp_id):
        return str(client.create_run(exp_id, run_name=name, tags=all_tags).info.run_id)


def _clean_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
            continue
        out[k] = float(v)
    return out


def close_run(
    spec: TrackingSpec,
    run_id: str,
    *,
    params: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Any] | None = None,
    texts: Mapping[str, str] | None = None,
    failed: bool = False,
) -> None:
    """Log params/metrics/text artifacts to ``run_id`` and end it (FINISHED or FAILED).

    Params already logged with the same value (a resumed run) are skipped.
    """
    from mlflow.entities import Metric, Param

    with store(spec) as (client, _):
        have = client.get_run(run_id).data.params
        new = {k: str(v)[:6000] for k, v in (params or {}).items() if v is not None}
        plist = [Param(k, v) for k, v in new.items() if k not in have]
        now = int(time.time() * 1000)
        mlist = [Metric(k, v, now, 0) for k, v in _clean_metrics(metrics or {}).items()]
        for i in range(0, len(plist), 100):  # MLflow's batch limits
            client.log_batch(run_id, params=plist[i : i + 100])
        for i in range(0, len(mlist), 1000):
            client.log_batch(run_id, metrics=mlist[i : i + 1000])
        for path, text in (texts or {}).items():
            client.log_text(run_id, text, path)
        client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")


def delete_run(spec: TrackingSpec, run_id: str | None) -> None:
    """Soft-delete ``run_id`` if it is live (a re-run replaces its comparison run)."""
    if run_is_live(spec, run_id):
        with store(spec) as (client, _):
            client.delete_run(str(run_id))


def table_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` as CSV (columns: the union of keys, in first-seen order)."""
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def log_comparison(
    spec: TrackingSpec,
    parent: str,
    sweep_id: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    previous: str | None = None,
) -> str:
    """The comparison run under ``parent``: ``jobs.csv`` / ``jobs.json`` (one row per job with
    its name, status, run id and metrics) and ``<job>/<metric>`` for :data:`HEADLINE`."""
    import mlflow
    import pandas as pd

    delete_run(spec, previous)
    run_id = open_run(spec, "comparison", "sweep-comparison", sweep_id, parent=parent)
    metrics: dict[str, float] = {
        "n_jobs": float(len(rows)),
        "n_failed": float(sum(r.get("status") != "done" for r in rows)),
    }
    for r in rows:
        for m in HEADLINE:
            if m in r:
                metrics[f"{r['job_key']}/{m}"] = r[m]
    with store(spec):
        mlflow.log_table(pd.DataFrame(list(rows)), "jobs.json", run_id=run_id)
    close_run(
        spec,
        run_id,
        params={"n_jobs": len(rows)},
        metrics=metrics,
        texts={"jobs.csv": table_csv(rows)},
        failed=bool(metrics["n_failed"]),
    )
    return run_id
