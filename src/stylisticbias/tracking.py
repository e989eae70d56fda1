"""MLflow tracking: one run per judge run (and, later, per analysis), all in one experiment.

Settings come from the ``tracking`` section of ``params.yaml`` (``conf/tracking/*.yaml``):
``enabled``, ``tracking_uri`` (default ``sqlite:///mlflow.db``: MLflow >= 3.13 refuses ``./mlruns``
file stores) and ``experiment_name``. If the environment variable ``STYLISTICBIAS_PARENT_RUN_ID``
is set (e.g. by a sweep driver), every run is created as a child of that run.

Every run is tagged with the git commit (when available) and ``simulated``. MLflow is imported
lazily, so code paths with tracking disabled do not pay for it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_URI = "sqlite:///mlflow.db"
DEFAULT_EXPERIMENT = "stylisticbias"
PARENT_ENV = "STYLISTICBIAS_PARENT_RUN_ID"

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


def resolve_tracking_uri(uri: str, env: Mapping[str, str] | None = None) -> str:
    """Make a relative ``sqlite:///x.db`` absolute under the project root.

    Queued ``dvc exp run`` experiments execute in a temporary copy of the repository
    (``.dvc/tmp/exps/...``); DVC sets ``DVC_ROOT`` to the real repository, so anchoring the
    database there keeps every experiment's runs in the one ``mlflow.db``.
    """
    env = os.environ if env is None else env
    prefix = "sqlite:///"
    if not uri.startswith(prefix) or uri.startswith(prefix + "/"):
        return uri
    rel = uri[len(prefix) :]
    base = Path(env.get("DVC_ROOT") or Path.cwd())
    return prefix + str((base / rel).resolve())


def tracking_cfg(params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tracking`` section with defaults filled in (a relative SQLite URI anchored)."""
    cfg = dict(params.get("tracking") or {})
    cfg.setdefault("enabled", False)
    cfg["tracking_uri"] = resolve_tracking_uri(str(cfg.get("tracking_uri") or DEFAULT_URI))
    cfg["experiment_name"] = cfg.get("experiment_name") or DEFAULT_EXPERIMENT
    return cfg


def tracking_enabled(params: Mapping[str, Any]) -> bool:
    """Whether runs should be logged (``tracking.enabled``)."""
    return bool(tracking_cfg(params)["enabled"])


def git_commit() -> str | None:
    """``git rev-parse HEAD`` of the working directory, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _flatten(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value)


@contextlib.contextmanager
def start_run(
    params: Mapping[str, Any],
    run_name: str,
    tags: Mapping[str, Any] | None = None,
    nested: bool = False,
) -> Iterator[Any]:
    """Start an MLflow run (yields the ``mlflow.ActiveRun``), or yield None if tracking is off.

    Sets the tracking URI and experiment from ``params["tracking"]``; tags the run with
    ``git_commit`` and ``simulated`` (from ``tags``, default false). ``nested=True`` nests under
    the currently active run; otherwise, if ``STYLISTICBIAS_PARENT_RUN_ID`` is set, the run is a
    child of that run (``mlflow.parentRunId`` tag).
    """
    if not tracking_enabled(params):
        yield None
        return
    import mlflow

    cfg = tracking_cfg(params)
    mlflow.set_tracking_uri(cfg["tracking_uri"])
    mlflow.set_experiment(cfg["experiment_name"])
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
    if nested and mlflow.active_run() is not None:
        ctx = mlflow.start_run(run_name=run_name, tags=all_tags, nested=True)
    else:
        if parent:
            all_tags["mlflow.parentRunId"] = parent
        ctx = mlflow.start_run(run_name=run_name, tags=all_tags)
    with ctx as run:
        yield run


def log_params(params: Mapping[str, Any]) -> None:
    """``mlflow.log_params`` with lists flattened to comma-separated strings."""
    import mlflow

    mlflow.log_params({k: _flatten(v) for k, v in params.items() if v is not None})


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
    params: Mapping[str, Any], run_params: Mapping[str, Any], summary: Mapping[str, Any]
) -> str | None:
    """Log one judge run (params from the engine, metrics from its run log); returns the run id."""
    tags = {
        "stage": "judge",
        "model": summary.get("model"),
        "engine": summary.get("engine"),
        "simulated": bool(summary.get("simulated", False)),
    }
    with start_run(params, run_name=f"judge/{summary.get('model')}", tags=tags) as run:
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
        return str(run.info.run_id)
