"""The tracking store: where runs go (the ``tracking`` section, typed) and every bounded contact
with it (preflight, experiment, artifact paths, the store's directory).

See :mod:`stylisticbias.tracking` for the settings and the fault handling.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from stylisticbias.config import load_group_option
from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.parse import typed
from stylisticbias.spec.sections import TrackingSpec
from stylisticbias.tracking.deadline import DeadlineExceeded, call_deadline

log = logging.getLogger(__name__)

#: The experiment tag MLflow 3's UI reads for the experiment's kind: ``custom_model_development``
#: opens it on its Runs tab (no "choose the experiment type" prompt) where the UI goes by the
#: tag; MLflow 3.17's UI goes by its sidebar switch "GenAI | Model training" (default GenAI, an
#: empty Traces/Overview page) unless the address says so: :func:`runs_url` links there.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"
#: values of :data:`EXPERIMENT_KIND_TAG` that are no one's choice (unset, or guessed by the UI)
_KIND_UNCHOSEN = (
    "",
    "no_inferred_type",
    "genai_development_inferred",
    "custom_model_development_inferred",
)
#: where ``mlflow ui`` serves by default
UI_URL = "http://127.0.0.1:5000"
#: the address query that opens MLflow 3's UI in its classic ("Model training") view
CLASSIC_VIEW = "workflowType=machine_learning"
#: artifacts of a SQLite store: ``<store dir>/mlruns/<experiment id>/<run id>/artifacts``
ARTIFACT_DIR = "mlruns"
#: loggers whose per-retry warnings would turn one failure into many lines
_NOISY_LOGGERS = ("urllib3.connectionpool", "urllib3.util.retry", "mlflow.utils.request_utils")


class TrackingError(StylisticBiasError):
    """The MLflow store cannot be reached, answers too slowly or is unreadable (one line)."""


def sqlite_path(spec: TrackingSpec) -> Path | None:
    """The store's file for a ``sqlite:///`` URI, else None."""
    prefix = "sqlite:///"
    uri = spec.tracking_uri or ""
    if not uri.startswith(prefix):
        return None
    return Path(uri[len(prefix) :].split("?", 1)[0])


def bound_s(spec: TrackingSpec) -> int:
    """Upper bound of one bounded request with its retries (timeouts + backoff sleeps)."""
    n = spec.max_retries + 1
    return n * spec.timeout_s + sum(2 ** (i - 1) for i in range(2, n))


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


@lru_cache(maxsize=1)
def _defaults() -> tuple[tuple[str, Any], ...]:
    """``conf/tracking/mlflow.yaml``: the one source of the keys a partial section leaves out."""
    cfg = load_group_option("tracking", "mlflow")
    cfg.pop("name", None)
    return tuple(cfg.items())


def tracking_spec(params: Mapping[str, Any]) -> TrackingSpec:
    """The ``tracking`` section as its typed spec, a relative SQLite URI anchored.

    Keys the section leaves out (a hand-written or partial ``params``) come from
    ``conf/tracking/mlflow.yaml``, except ``enabled`` (off unless said); a bad value is one
    :class:`StylisticBiasError` line naming the key (the schema's checks).
    """
    defaults = dict(_defaults())
    given = {k: v for k, v in dict(params.get("tracking") or {}).items() if v is not None}
    spec = typed(TrackingSpec, {**defaults, "enabled": False, **given}, "params.yaml tracking")
    return replace(spec, tracking_uri=resolve_tracking_uri(str(spec.tracking_uri)))


def tracking_cfg(params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tracking`` section with defaults filled in (a relative SQLite URI anchored)."""
    spec = tracking_spec(params)
    cfg = dict(params.get("tracking") or {})
    cfg.update(
        enabled=spec.enabled,
        tracking_uri=spec.tracking_uri,
        experiment_name=spec.experiment_name,
        max_retries=spec.max_retries,
        timeout_s=spec.timeout_s,
    )
    return cfg


def tracking_enabled(params: Mapping[str, Any]) -> bool:
    """Whether runs should be logged (``tracking.enabled``)."""
    return bool((params.get("tracking") or {}).get("enabled", False))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    line = line if len(line) <= 200 else line[:197] + "..."
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


def _fail(spec: TrackingSpec, what: str) -> TrackingError:
    return TrackingError(
        f"MLflow tracking store {spec.tracking_uri} {what} (tracking.max_retries="
        f"{spec.max_retries}, tracking.timeout_s={spec.timeout_s}); outputs written so far are "
        "kept: rerun when the store is back, or set tracking=none"
    )


def _store_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean "the store failed" (not a bug in our code)."""
    import requests
    from mlflow.exceptions import MlflowException

    errors: list[type[BaseException]] = [
        MlflowException,
        requests.RequestException,
        sqlite3.Error,
        OSError,
        TimeoutError,
    ]
    try:
        from sqlalchemy.exc import SQLAlchemyError

        errors.append(SQLAlchemyError)
    except ImportError:  # pragma: no cover - sqlalchemy comes with mlflow
        pass
    return tuple(errors)


@contextlib.contextmanager
def bounded(spec: TrackingSpec) -> Iterator[None]:
    """Bound MLflow's HTTP retries/timeouts by ``spec`` and turn store failures into one line.

    Sets ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, ``MLFLOW_HTTP_REQUEST_TIMEOUT``,
    ``MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR`` (1 s, doubling) and ``..._BACKOFF_JITTER`` (0) for the
    block (restored after), silences the per-retry warnings of urllib3, gives every HTTP request
    (one ``requests`` call with all its retries) a total deadline of :func:`bound_s` seconds
    (:func:`~stylisticbias.tracking.deadline.call_deadline`: the timeouts above bound each read
    only, and a server trickling a byte every 2 s would never trip them), and re-raises an
    MLflow, HTTP, SQLite or OS error, or a passed deadline, as :class:`TrackingError` naming
    the URI.
    """
    env = {
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(spec.max_retries),
        "MLFLOW_HTTP_REQUEST_TIMEOUT": str(spec.timeout_s),
        "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
        "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0",
    }
    saved_env = {k: os.environ.get(k) for k in env}
    loggers = [logging.getLogger(n) for n in _NOISY_LOGGERS]
    saved_levels = [lg.level for lg in loggers]
    os.environ.update(env)
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with _deadline_per_request(bound_s(spec)):
            yield
    except TrackingError:
        raise
    except DeadlineExceeded as exc:
        raise _fail(spec, f"answered too slowly: {exc}") from None
    except _store_errors() as exc:
        raise _fail(spec, f"failed: {_first_line(exc)}") from exc
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for lg, level in zip(loggers, saved_levels, strict=True):
            lg.setLevel(level)


@contextlib.contextmanager
def _deadline_per_request(seconds: float) -> Iterator[None]:
    """Every ``requests`` call of the block (MLflow's included: one ``Session.send``, urllib3's
    retries inside it) gets a total deadline of ``seconds``."""
    import requests

    original = requests.Session.send

    def send(self: requests.Session, request: Any, **kwargs: Any) -> Any:
        with call_deadline(seconds, f"{request.method} {request.path_url}"):
            return original(self, request, **kwargs)

    requests.Session.send = send  # type: ignore[method-assign]
    try:
        yield
    finally:
        requests.Session.send = original  # type: ignore[method-assign]


def preflight(spec: TrackingSpec) -> None:
    """Check the store answers before MLflow touches it; raise :class:`TrackingError` if not.

    ``http(s)``: up to ``max_retries`` + 1 GETs of ``<uri>/health``, ``timeout_s`` each (in
    total: a server that trickles its answer counts as silent); any HTTP
    answer below 500 counts as reachable. ``sqlite``: an existing file must open read-only as a
    SQLite database and pass ``PRAGMA quick_check`` (waiting at most ``timeout_s`` for a lock);
    a missing file is created by MLflow. Other schemes are left to MLflow (under :func:`bounded`).
    """
    uri = spec.tracking_uri
    if uri.startswith(("http://", "https://")):
        _probe_http(spec)
    elif sqlite_path(spec) is not None:
        _check_sqlite(spec, sqlite_path(spec))


def _probe_http(spec: TrackingSpec) -> None:
    import time

    import requests

    url = spec.tracking_uri.rstrip("/") + "/health"
    # the TLS settings MLflow itself honours
    insecure = os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() in ("1", "true")
    verify: bool | str = os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH") or not insecure
    cert = os.environ.get("MLFLOW_TRACKING_CLIENT_CERT_PATH") or None
    reason = ""
    for attempt in range(spec.max_retries + 1):
        if attempt:
            time.sleep(min(2 ** (attempt - 1), spec.timeout_s) if attempt > 1 else 0)
        try:
            with call_deadline(spec.timeout_s, "GET /health"):
                resp = requests.get(url, timeout=spec.timeout_s, verify=verify, cert=cert)
        except (requests.Timeout, DeadlineExceeded):
            reason = f"did not answer within {spec.timeout_s} s"
        except requests.RequestException as exc:
            refused = "refused" in str(exc).lower()
            reason = f"is unreachable ({'connection refused' if refused else type(exc).__name__})"
        else:
            if resp.status_code < 500:
                return
            reason = f"answered HTTP {resp.status_code}"
        log.debug("tracking preflight %d/%d: %s", attempt + 1, spec.max_retries + 1, reason)
    raise _fail(spec, f"{reason} after {spec.max_retries + 1} tries")


def _check_sqlite(spec: TrackingSpec, path: Path) -> None:
    if not path.exists():
        if not path.parent.is_dir():
            raise _fail(spec, f"cannot be created: directory {path.parent} does not exist")
        return
    try:
        with contextlib.closing(
            sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=spec.timeout_s)
        ) as con:
            result = con.execute("PRAGMA quick_check").fetchone()
    except sqlite3.Error as exc:
        raise _fail(spec, f"is not a readable SQLite database ({exc})") from None
    if not result or result[0] != "ok":
        answer = result[0] if result else "no answer"
        raise _fail(spec, f"is corrupt (PRAGMA quick_check: {answer})")


def ensure_experiment(spec: TrackingSpec) -> str:
    """Point MLflow at the store and the experiment (created if missing); returns its id.

    The experiment is tagged ``mlflow.experimentKind=custom_model_development`` (unless a kind
    was chosen already), so MLflow's UI opens it on its Runs tab rather than on Traces.
    For a SQLite store, the experiment's artifact location is recorded relative to the store's
    directory (``mlruns/<id>``), and runs logged by older versions under that directory with an
    absolute path are rewritten to relative ones (see the module docstring).
    """
    import mlflow
    from mlflow.exceptions import MlflowException

    mlflow.set_tracking_uri(spec.tracking_uri)
    client = mlflow.MlflowClient(spec.tracking_uri)
    exp = client.get_experiment_by_name(spec.experiment_name)
    if exp is None:
        try:
            exp_id = client.create_experiment(
                spec.experiment_name, tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
            )
        except MlflowException:  # created meanwhile by another process
            exp = client.get_experiment_by_name(spec.experiment_name)
            if exp is None:
                raise
            exp_id = exp.experiment_id
    else:
        exp_id = exp.experiment_id
    if exp is not None and exp.tags.get(EXPERIMENT_KIND_TAG, "") in _KIND_UNCHOSEN:
        # an experiment made before (or by someone else) opens on its runs too; a kind a user
        # chose in the UI's selector is left alone
        client.set_experiment_tag(exp_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    if sqlite_path(spec) is not None:
        for eid in dict.fromkeys(("0", str(exp_id))):  # MLflow's "Default" experiment too
            relativize_artifacts(sqlite_path(spec), eid, spec.timeout_s)
    mlflow.set_experiment(experiment_id=exp_id)
    return str(exp_id)


def runs_url(spec: TrackingSpec, experiment_id: str, ui: str = UI_URL) -> str:
    """The MLflow UI's address of the experiment's Runs tab.

    MLflow 3's UI (3.17 checked) opens every experiment in its GenAI view (Overview / Traces)
    unless the address says ``workflowType=machine_learning`` or the browser remembers the
    sidebar's "Model training" switch: there, the experiment tag alone does not decide.
    ``ui`` is the server for a SQLite store (``mlflow ui``'s default address); an ``http(s)``
    tracking URI is its own UI.
    """
    return f"{_ui_base(spec, ui)}/#/experiments/{experiment_id}/runs?{CLASSIC_VIEW}"


def run_url(spec: TrackingSpec, experiment_id: str, run_id: str, ui: str = UI_URL) -> str:
    """The MLflow UI's address of one run's page, in the classic ("Model training") view.

    MLflow 3.17's UI shows a run's page in its GenAI view (sidebar Overview / Traces /
    Evaluation runs, the run under "Evaluations") unless the address carries
    ``workflowType=machine_learning`` (its ``WorkflowTypeProvider`` reads the parameter before
    the browser's remembered switch), as for :func:`runs_url`.
    """
    return f"{_ui_base(spec, ui)}/#/experiments/{experiment_id}/runs/{run_id}?{CLASSIC_VIEW}"


def _ui_base(spec: TrackingSpec, ui: str) -> str:
    """The UI's root: ``ui`` for a SQLite store, the tracking server's own address otherwise."""
    base = spec.tracking_uri if spec.tracking_uri.startswith(("http://", "https://")) else ui
    return base.rstrip("/")


def relativize_artifacts(db: Path, experiment_id: str, timeout_s: float = 5.0) -> None:
    """Record experiment ``experiment_id``'s artifact paths relative to ``db``'s directory.

    MLflow stores absolute paths (``resolve_uri_if_local``), so a moved project would point at
    its old location. A new experiment gets ``mlruns/<id>``; an absolute location inside the
    store's directory, and every run path under it, lose that directory's prefix. Locations
    outside the store's directory (or remote ones) are left alone.
    """
    base = db.resolve().parent
    with contextlib.closing(sqlite3.connect(db, timeout=timeout_s)) as con, con:
        row = con.execute(
            "SELECT artifact_location FROM experiments WHERE experiment_id = ?", (experiment_id,)
        ).fetchone()
        if row is None or not row[0]:
            return
        loc = str(row[0])
        path = loc[len("file://") :] if loc.startswith("file://") else loc
        if "://" in path or not Path(path).is_absolute():
            return
        n_runs = con.execute(
            "SELECT COUNT(*) FROM runs WHERE experiment_id = ?", (experiment_id,)
        ).fetchone()[0]
        try:
            rel = Path(path).relative_to(base).as_posix()
        except ValueError:
            if n_runs:
                return  # artifacts already elsewhere: leave them where they are
            rel = f"{ARTIFACT_DIR}/{experiment_id}"
        con.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
            (rel, experiment_id),
        )
        con.execute(
            "UPDATE runs SET artifact_uri = ? || substr(artifact_uri, ?) "
            "WHERE experiment_id = ? AND substr(artifact_uri, 1, ?) = ?",
            (rel, len(loc) + 1, experiment_id, len(loc), loc),
        )


@contextlib.contextmanager
def in_store_dir(spec: TrackingSpec) -> Iterator[None]:
    """Work from the SQLite store's directory (relative artifact paths resolve there)."""
    if sqlite_path(spec) is None:
        yield
        return
    with contextlib.chdir(sqlite_path(spec).resolve().parent):
        yield
