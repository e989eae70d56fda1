"""MLflow tracking: one run per judge run (and, later, per analysis), all in one experiment.

Settings come from the ``tracking`` section of ``params.yaml`` (``conf/tracking/*.yaml``), typed as
:class:`stylisticbias.spec.sections.TrackingSpec`: ``enabled``, ``tracking_uri`` (``conf/tracking/
mlflow.yaml``: ``sqlite:///mlflow.db``, since MLflow >= 3.13 refuses ``./mlruns`` file stores),
``experiment_name``, ``max_retries`` and ``timeout_s``. If the environment variable
``STYLISTICBIAS_PARENT_RUN_ID`` is set (e.g. by a sweep driver), every run is created as a child
of that run.

Faults (see ``docs/reliability.md``): every contact with the store is bounded. An ``http(s)``
server is probed first (``max_retries`` + 1 tries of ``timeout_s`` each), a SQLite file is
checked (``PRAGMA quick_check``) before MLflow opens it, and MLflow's own HTTP requests get the
same bounds through ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` / ``..._TIMEOUT`` / ``..._BACKOFF_*``
(MLflow's defaults retry for about 4 minutes). Any store failure becomes one
:class:`TrackingError` line naming the URI.

Artifacts of a SQLite store live beside it, in ``mlruns/<experiment id>/``, and the store
records that location *relative* to its own directory (MLflow itself always records absolute
paths; :func:`ensure_experiment` rewrites them), so a moved or re-cloned project still opens its
runs. MLflow resolves relative artifact paths against the working directory: open the store
from the directory that holds it (the project root: ``mlflow ui --backend-store-uri
sqlite:///mlflow.db``); :func:`start_run` logs from there.

Every run is tagged with the git commit (when available) and ``simulated``. MLflow is imported
lazily, so code paths with tracking disabled do not pay for it.
"""

from stylisticbias.tracking.runs import (
    JUDGE_METRICS,
    MAX_PARAM_LENGTH,
    PARENT_ENV,
    ChildRuns,
    child_runs,
    delete_other_runs,
    flatten_params,
    git_commit,
    log_judge_run,
    log_metrics,
    log_params,
    param_value,
    start_run,
)
from stylisticbias.tracking.store import (
    ARTIFACT_DIR,
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    UI_URL,
    TrackingError,
    bound_s,
    bounded,
    ensure_experiment,
    in_store_dir,
    preflight,
    relativize_artifacts,
    resolve_tracking_uri,
    run_url,
    runs_url,
    sqlite_path,
    tracking_cfg,
    tracking_enabled,
    tracking_spec,
)

__all__ = [
    "ARTIFACT_DIR",
    "EXPERIMENT_KIND",
    "EXPERIMENT_KIND_TAG",
    "JUDGE_METRICS",
    "MAX_PARAM_LENGTH",
    "PARENT_ENV",
    "UI_URL",
    "ChildRuns",
    "TrackingError",
    "bound_s",
    "bounded",
    "child_runs",
    "delete_other_runs",
    "ensure_experiment",
    "flatten_params",
    "git_commit",
    "in_store_dir",
    "log_judge_run",
    "log_metrics",
    "log_params",
    "param_value",
    "preflight",
    "relativize_artifacts",
    "resolve_tracking_uri",
    "run_url",
    "runs_url",
    "sqlite_path",
    "start_run",
    "tracking_cfg",
    "tracking_enabled",
    "tracking_spec",
]
