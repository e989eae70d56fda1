"""MLflow runs: start one (tagged, nested under a sweep's run), log params and metrics, log a
judge run.

Every contact goes through :mod:`stylisticbias.tracking.store` (bounded, one-line errors).
"""

from __future__ import annotations

import contextlib
import logging
import numbers
import os
import subprocess
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from stylisticbias.spec.sections import TrackingSpec
from stylisticbias.tracking.grouping import (
    TAG_EXP_NAME,
    TAG_SWEEP,
    dvc_exp_name,
    find_or_create_parent,
    sweep_id,
)
from stylisticbias.tracking.store import (
    bounded,
    ensure_experiment,
    in_store_dir,
    preflight,
    resolve_tracking_uri,
)

log = logging.getLogger(__name__)

PARENT_ENV = "STYLISTICBIAS_PARENT_RUN_ID"
#: MLflow's limit on a param value (``mlflow.utils.validation.MAX_PARAM_VAL_LENGTH``)
MAX_PARAM_LENGTH = 6000

#: metrics a judge run logs (keys of its run log, ``data/judgments/<model>.run.json``)
JUDGE_METRICS = (
    "images_per_s",
    "prompts_per_s",
    "invalid_rate",
    "undecided_mass",
    "image_tokens_per_image",
    "seconds",
    "n_images",
    "n_records",
    "n_failures",
)


@dataclass(frozen=True)
class ChildRuns:
    """Where the runs started inside :func:`child_runs` go: the parent of each ``model`` tag
    (``parents``), else ``default``; named ``<label>/<name>`` when ``label`` is set."""

    parents: Mapping[str, str]
    default: str | None = None
    label: str | None = None

    def parent(self, tags: Mapping[str, Any] | None) -> str | None:
        """The parent run id of a run with ``tags`` (None: no parent from here)."""
        model = (tags or {}).get("model")
        return self.parents.get(str(model), self.default) if model is not None else self.default

    def name(self, run_name: str) -> str:
        """``run_name`` under its parent."""
        return f"{self.label}/{run_name}" if self.label else run_name


_CHILDREN: ContextVar[ChildRuns | None] = ContextVar("stylisticbias_child_runs", default=None)


@contextlib.contextmanager
def child_runs(
    parents: Mapping[str, str], default: str | None = None, label: str | None = None
) -> Iterator[ChildRuns]:
    """Make every run :func:`start_run` starts inside a child of a given parent: the run whose
    ``model`` tag is a key of ``parents`` goes under that run, any other under ``default``
    (none: as without this context); ``label`` prefixes their names (``reflect/<model>``).
    The audit's track stage logs each protocol's runs this way, under one parent run per
    model and one cross-model run (:mod:`stylisticbias.report.track`). It takes precedence
    over ``STYLISTICBIAS_PARENT_RUN_ID``, ``nested`` and a sweep's parent."""
    children = ChildRuns(dict(parents), default, label)
    token = _CHILDREN.set(children)
    try:
        yield children
    finally:
        _CHILDREN.reset(token)


def git_commit() -> str | None:
    """``git rev-parse HEAD`` of the working directory, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def param_value(value: Any) -> str:
    """One param value as the MLflow UI shows it: ``100`` (never ``100.0``), ``0.05``,
    ``true``/``false``, ``null``, lists as ``1,2,3``; the text of anything else."""
    if value is None:
        return "null"
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b":
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))  # numpy ints too
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, list | tuple):
        return ",".join(param_value(v) for v in value)
    return str(value)


def flatten_params(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"analysis": {"bootstrap": {"n_resamples": 1000}}}`` -> ``{"analysis.bootstrap.
    n_resamples": "1000"}``: nested mappings become dotted keys (no dict blobs), every value
    goes through :func:`param_value`; an empty mapping is left out."""
    out: dict[str, str] = {}
    for k, v in params.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten_params(v, key + "."))
        else:
            out[key] = param_value(v)
    return out


def _flatten(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value)


@contextlib.contextmanager
def start_run(
    tracking: TrackingSpec,
    run_name: str,
    tags: Mapping[str, Any] | None = None,
    nested: bool = False,
    sweep: str | None = None,
) -> Iterator[Any]:
    """Start an MLflow run (yields the ``mlflow.ActiveRun``), or yield None if tracking is off.

    Sets the tracking URI and experiment from ``tracking`` (a relative SQLite URI is anchored
    here, :func:`resolve_tracking_uri`); tags the run with
    ``git_commit`` and ``simulated`` (from ``tags``, default false). ``nested=True`` nests under
    the currently active run; otherwise, if ``STYLISTICBIAS_PARENT_RUN_ID`` is set, the run is a
    child of that run (``mlflow.parentRunId`` tag); otherwise, with ``sweep`` (an id of
    :func:`stylisticbias.tracking.grouping.sweep_id`), of that sweep's parent run (created if
    missing). Inside :func:`child_runs` the run's parent (and name) come from there.
    """
    if not tracking.enabled:
        yield None
        return
    import mlflow

    spec = replace(tracking, tracking_uri=resolve_tracking_uri(str(tracking.tracking_uri)))
    all_tags = {"simulated": "false"}
    commit = git_commit()
    if commit:
        all_tags["git_commit"] = commit
    all_tags.update(
        {
            k: _flatten(v).lower() if isinstance(v, bool) else _flatten(v)
            for k, v in (tags or {}).items()
        }
    )
    parent = os.environ.get(PARENT_ENV)
    children = _CHILDREN.get()
    under = children.parent(tags) if children is not None else None
    if under is not None and children is not None:
        parent, run_name, nested, sweep = under, children.name(run_name), False, None
    with bounded(spec):
        preflight(spec)
        exp_id = ensure_experiment(spec)
        with in_store_dir(spec):
            if nested and mlflow.active_run() is not None:
                ctx = mlflow.start_run(run_name=run_name, tags=all_tags, nested=True)
            else:
                if not parent and sweep:
                    parent = find_or_create_parent(exp_id, sweep, {"git_commit": commit or ""})
                    all_tags[TAG_SWEEP] = sweep
                if parent:
                    all_tags["mlflow.parentRunId"] = parent
                ctx = mlflow.start_run(run_name=run_name, tags=all_tags)
            with ctx as run:
                yield run


def delete_other_runs(experiment_id: str, tag: str, value: str, keep: str) -> list[str]:
    """Delete the active runs tagged ``tag=value`` other than ``keep``; returns their ids.

    Used to replace a run by its re-logged copy (the rerun of an interrupted stage), so the
    experiment holds one run per key; MLflow's delete is soft (``mlflow gc`` purges).
    """
    import mlflow
    from mlflow.entities import ViewType

    client = mlflow.MlflowClient()
    runs = client.search_runs(
        [experiment_id],
        f"tags.`{tag}` = '{value}'",
        run_view_type=ViewType.ACTIVE_ONLY,
        max_results=1000,
    )
    gone = [r.info.run_id for r in runs if r.info.run_id != keep]
    for run_id in gone:
        client.delete_run(run_id)
    return gone


def log_params(params: Mapping[str, Any]) -> None:
    """``mlflow.log_params`` of :func:`flatten_params` (dotted keys, ints as ints, ``true``/
    ``false``/``null``, lists comma-separated); a value longer than MLflow's limit is cut with
    a warning naming the key."""
    import mlflow

    flat = flatten_params(params)
    for k, v in flat.items():
        if len(v) > MAX_PARAM_LENGTH:
            log.warning("MLflow param %s: %d characters, cut to %d", k, len(v), MAX_PARAM_LENGTH)
            flat[k] = v[: MAX_PARAM_LENGTH - 3] + "..."
    mlflow.log_params(flat)


def log_metrics(metrics: Mapping[str, Any]) -> None:
    """``mlflow.log_metrics`` for the finite numeric entries of ``metrics``."""
    import math

    import mlflow

    clean = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, int | float) and math.isfinite(float(v)):
            clean[k] = float(v)
    mlflow.log_metrics(clean)


def log_judge_run(
    tracking: TrackingSpec, run_params: Mapping[str, Any], summary: Mapping[str, Any]
) -> str | None:
    """Log one judge run (params from the engine, metrics from its run log); returns the run id.

    A run that judged no image (everything resumed from finished records, or a dry run) logs
    nothing: the run that judged them is already in the store, and a second run with the same
    numbers would only clutter the experiment. Inside ``dvc exp run`` (queued or not) the run
    is named after the experiment (``judge/<model> @<experiment>``, tag ``dvc.exp_name``) and
    nested under the parent run of its baseline's experiments, beside the report's runs.
    """
    if not summary.get("images_judged"):
        log.info("judge %s: no image judged in this run; nothing new to log", summary.get("model"))
        return None
    tags = {
        "stage": "judge",
        "model": summary.get("model"),
        "engine": summary.get("engine"),
        "simulated": bool(summary.get("simulated", False)),
    }
    exp_name = dvc_exp_name()
    name = f"judge/{summary.get('model')}"
    if exp_name:
        tags[TAG_EXP_NAME] = exp_name
        name += f" @{exp_name}"
    with start_run(tracking, run_name=name, tags=tags, sweep=sweep_id()) as run:
        if run is None:
            return None
        log_params(run_params)
        log_metrics({k: summary.get(k) for k in JUDGE_METRICS})
        api: dict[str, float] = {}  # openai engine: requests, cached, retries, tokens, cost
        for stats in summary.get("engine_stats") or []:
            for k, v in (stats or {}).items():
                if k.startswith("api_") and isinstance(v, int | float):
                    api[k] = api.get(k, 0.0) + float(v)
        log_metrics(api)
        jobs = summary.get("batch_jobs") or []
        if jobs:  # every provider batch job billed: ids, lines, tokens, cost (the run log's)
            import mlflow

            mlflow.log_dict({"batch_jobs": list(jobs)}, "batch_jobs.json")
            ids = [str(j.get("batch_id") or "") for j in jobs if isinstance(j, dict)]
            mlflow.set_tag("batch_ids", ",".join(i for i in ids if i)[:5000])
        return str(run.info.run_id)
