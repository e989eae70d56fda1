"""The ``track`` stage under tracking faults, its reruns, and a moved project's artifacts.

Unreachable, silent or hanging servers and corrupt SQLite stores must fail in one line naming
the URI within the configured bounds (MLflow's own defaults retry for about 4 minutes); a rerun
once the store is back (also after a SIGKILL mid-logging) leaves exactly one run per model and
one comparison run; artifact paths are relative to the store, so a moved project opens its runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest

from stylisticbias.config import ROOT, dump_params, project_root
from stylisticbias.report.mlflow_log import TAG_KEY, TAG_KIND
from stylisticbias.report.run import build_report
from stylisticbias.report.track import RUNS_FILE, run_log_path, track_report
from stylisticbias.spec.parse import config_from_params
from stylisticbias.spec.sections import TrackingSpec
from stylisticbias.tracking import TrackingError, bound_s, store, tracking_spec
from stylisticbias_dev.http_stub import answer, http_stub

MODELS = ["simulated-strong", "simulated-weak"]


def _project(make: Any, root: Path, models: list[str] = MODELS) -> dict[str, Any]:
    """A report under ``root`` tracked to root/mlflow.db: ``make`` is ``report_output`` (the
    session's report, copied) or ``analysis_output`` (the report is built here, in ``root``)."""
    params = make(models, simulated=True)
    if not (root / params["paths"]["reports"] / "README.md").exists():
        shutil.copytree(project_root() / "conf" / "reference", root / "conf" / "reference")
        build_report(config_from_params(params), root)
    params["tracking"].update(max_retries=1, timeout_s=1)
    return params


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _silent_server() -> Iterator[str]:
    """A loopback TCP server that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(srv.accept()[0])

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        srv.close()


def _hanging_api_server() -> contextlib.AbstractContextManager[str]:
    """An HTTP server whose ``/health`` says OK but whose MLflow API never answers."""

    def hang(h: http.server.BaseHTTPRequestHandler, stop: threading.Event) -> None:
        if h.path.rstrip("/") == "/health":
            answer(h, b"OK")
        else:
            stop.wait(60)

    return http_stub(get=hang, post=hang)


#: seconds between two bytes of the trickling server: far under every read timeout
TRICKLE_S = 0.05
#: seconds a total deadline really runs in these tests (the bound the code asks for is recorded)
FAST_DEADLINE_S = 0.2
#: a per-read timeout that cannot fire before :data:`FAST_DEADLINE_S`, however loaded the
#: machine: whatever ends a hanging or trickling call is the total deadline
SLOW_READS_S = 30


def _trickling_server(health_ok: bool) -> contextlib.AbstractContextManager[str]:
    """An HTTP server that answers one byte every :data:`TRICKLE_S`, forever (``/health`` too,
    unless ``health_ok``): no read ever waits as long as the read timeout, so a per-read
    timeout never fires."""

    def trickle(h: http.server.BaseHTTPRequestHandler, stop: threading.Event) -> None:
        if health_ok and h.path.rstrip("/") == "/health":
            answer(h, b"OK")
            return
        h.wfile.write(b"HTTP/1.1 200 OK\r\n")  # then a header, one byte at a time
        while not stop.is_set():
            h.wfile.write(b"X")
            h.wfile.flush()
            stop.wait(TRICKLE_S)

    return http_stub(get=trickle, post=trickle)


@dataclasses.dataclass
class Armed:
    """One total deadline the tracking code armed: the seconds it asked for, the request, and
    MLflow's request limits in force at that moment."""

    seconds: float
    what: str
    mlflow_env: dict[str, str]


def _fast_deadlines(monkeypatch: pytest.MonkeyPatch, *, health: bool) -> list[Armed]:
    """Record every total deadline the tracking code arms and let it run
    :data:`FAST_DEADLINE_S` instead: each MLflow API request's, and with ``health`` each
    ``GET /health`` probe's too (else those run their own seconds: the probe must pass). The
    deadline that ends a call is then proven by what was armed and by the error it raised,
    not by how many seconds passed."""
    armed: list[Armed] = []
    real = store.call_deadline

    def fast(seconds: float, what: str = "the call") -> contextlib.AbstractContextManager[None]:
        env = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_HTTP_REQUEST_")}
        armed.append(Armed(seconds, what, env))
        return real(FAST_DEADLINE_S if health or what != "GET /health" else seconds, what)

    monkeypatch.setattr(store, "call_deadline", fast)
    return armed


def _fails_fast(params: dict[str, Any], root: Path, match: str) -> float:
    """track_report must raise one TrackingError line naming the URI; returns its seconds."""
    uri = params["tracking"]["tracking_uri"]
    runs_file = root / RUNS_FILE
    before = runs_file.read_bytes() if runs_file.exists() else None
    t0 = time.monotonic()
    with pytest.raises(TrackingError) as info:
        track_report(config_from_params(params), root)
    seconds = time.monotonic() - t0
    msg = str(info.value)
    assert "\n" not in msg and uri in msg and match in msg, msg
    after = runs_file.read_bytes() if runs_file.exists() else None
    assert after == before  # nothing claims these runs were logged
    return seconds


def test_unreachable_server_fails_within_seconds(
    tmp_path: Path, report_output, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = _project(report_output, tmp_path, MODELS[:1])
    params["tracking"]["tracking_uri"] = f"http://127.0.0.1:{_closed_port()}"
    # three tries, 0 s and 2 s of backoff before the second and the third; the probes' own
    # deadlines (timeout_s) far beyond a refused connection, so "refused" it is, on any load
    params["tracking"].update(max_retries=2, timeout_s=SLOW_READS_S)
    armed = _fast_deadlines(monkeypatch, health=False)
    seconds = _fails_fast(params, tmp_path, "is unreachable (connection refused) after 3 tries")
    # the preflight's three bounded probes and nothing of MLflow's (~4 minutes of retries)
    _assert_probes(armed, tracking_spec(params), 3)
    assert seconds >= 2, seconds  # the backoff was slept (a lower bound: load only adds)


def test_silent_server_is_bounded_by_the_timeout(
    tmp_path: Path, report_output, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = _project(report_output, tmp_path, MODELS[:1])
    armed = _fast_deadlines(monkeypatch, health=True)
    with _silent_server() as uri:
        params["tracking"]["tracking_uri"] = uri
        _fails_fast(params, tmp_path, "did not answer within 1 s after 2 tries")
    # two probes, each under a total deadline of timeout_s; MLflow is never reached
    _assert_probes(armed, tracking_spec(params), 2)


def _armed(armed: list[Armed]) -> list[tuple[float, str]]:
    return [(a.seconds, a.what) for a in armed]


def _assert_probes(armed: list[Armed], spec: TrackingSpec, tries: int) -> None:
    """The preflight armed a total deadline of ``timeout_s`` for each of its ``tries`` probes,
    and nothing else but, inside a probe, the per-request ``bound_s`` every request of the
    block gets (the earlier one holds; not armed at all when the probe's deadline ended the try
    before its request was sent, as on a loaded machine)."""
    probes = [a for a in armed if a.seconds == spec.timeout_s]
    assert _armed(probes) == [(spec.timeout_s, "GET /health")] * tries, armed
    others = set(_armed([a for a in armed if a not in probes]))
    assert others <= {(bound_s(spec), "GET /health")}, armed


def _api_calls(armed: list[Armed]) -> list[Armed]:
    return [a for a in armed if a.what != "GET /health"]


def test_hanging_api_is_bounded_by_mlflow_request_limits(
    tmp_path: Path, report_output, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /health answers, so the preflight passes; MLflow's own requests then hang: the total
    # deadline per call (bound_s) ends the first of them, under the MLFLOW_HTTP_REQUEST_*
    # bounds set from tracking.max_retries/timeout_s
    params = _project(report_output, tmp_path, MODELS[:1])
    params["tracking"].update(max_retries=1, timeout_s=SLOW_READS_S)
    before = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_HTTP")}
    armed = _fast_deadlines(monkeypatch, health=False)
    with _hanging_api_server() as uri:
        params["tracking"]["tracking_uri"] = uri
        _fails_fast(params, tmp_path, "answered too slowly")
    spec = tracking_spec(params)
    api = _api_calls(armed)
    assert len(api) == 1 and api[0].seconds == bound_s(spec), armed  # no retry after it
    assert api[0].mlflow_env["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "1"
    assert api[0].mlflow_env["MLFLOW_HTTP_REQUEST_TIMEOUT"] == str(SLOW_READS_S)
    assert {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_HTTP")} == before


@pytest.mark.parametrize(
    ("health_ok", "match"),
    [
        pytest.param(
            False, f"did not answer within {SLOW_READS_S} s after 2 tries", id="health-trickles"
        ),
        pytest.param(True, "answered too slowly", id="api-trickles"),
    ],
)
def test_trickling_server_is_bounded_by_a_total_deadline_per_call(
    tmp_path: Path, report_output, monkeypatch: pytest.MonkeyPatch, health_ok: bool, match: str
) -> None:
    # one byte every TRICKLE_S: no read waits as long as the read timeout, so only a total
    # deadline per call ends it (before: track hung for as long as the server kept trickling)
    params = _project(report_output, tmp_path, MODELS[:1])
    params["tracking"].update(max_retries=1, timeout_s=SLOW_READS_S)
    before = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_HTTP")}
    armed = _fast_deadlines(monkeypatch, health=not health_ok)
    with _trickling_server(health_ok) as uri:
        params["tracking"]["tracking_uri"] = uri
        with _watchdog(120):  # a hang fails the test instead of blocking the suite
            _fails_fast(params, tmp_path, match)
    spec = tracking_spec(params)
    if health_ok:  # the preflight passed; the first MLflow request hit bound_s, not retried
        api = _api_calls(armed)
        assert len(api) == 1 and api[0].seconds == bound_s(spec), armed
    else:  # each preflight try: a total deadline of timeout_s, then the next try
        _assert_probes(armed, spec, 2)
    assert {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_HTTP")} == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no alarm left behind


@contextlib.contextmanager
def _watchdog(seconds: int) -> Iterator[None]:
    """Fail (KeyboardInterrupt-free) if the block is still running after ``seconds``."""
    done = threading.Event()

    def bark() -> None:
        if not done.wait(seconds):
            import _thread

            _thread.interrupt_main()  # turns the hang into a test failure

    t = threading.Thread(target=bark, daemon=True)
    t.start()
    try:
        yield
    except KeyboardInterrupt:
        pytest.fail(f"still running after {seconds} s: no total deadline")
    finally:
        done.set()


def _active_report_runs(params: dict[str, Any]) -> Any:
    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    exp = mlflow.get_experiment_by_name(params["tracking"]["experiment_name"])
    return mlflow.search_runs([exp.experiment_id])


# slow tier: two track runs on a damaged store (~9 CPU-s); fast sibling:
# test_stage_script_prints_one_error_line
@pytest.mark.slow
def test_corrupt_store_fails_in_one_line_and_rerun_logs_each_run_once(
    tmp_path: Path, report_output
) -> None:
    params = _project(report_output, tmp_path)
    track_report(config_from_params(params), tmp_path)
    db = tmp_path / "mlflow.db"
    good = db.read_bytes()
    db.write_bytes(b"this is not a database" * 100)
    _fails_fast(params, tmp_path, "is not a readable SQLite database")
    db.write_bytes(good[: len(good) // 2])  # a truncated store
    _fails_fast(params, tmp_path, "SQLite")
    db.write_bytes(good)  # the store is back
    track_report(config_from_params(params), tmp_path)
    runs = _active_report_runs(params)
    kinds = sorted(runs["tags.stylisticbias.run_kind"])
    assert kinds == ["comparison", "model", "model"], kinds
    assert sorted(runs[runs["tags.stylisticbias.run_kind"] == "model"]["tags.model"]) == MODELS
    assert (runs["status"] == "FINISHED").all()
    logged = json.loads(run_log_path(tmp_path / RUNS_FILE).read_text())["runs"]
    assert set(logged.values()) == set(runs["run_id"])


KILLER = """
import os, signal, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import json
from stylisticbias.report import mlflow_log
from stylisticbias.report.track import track_report
from stylisticbias.spec.parse import config_from_params

real = mlflow_log._model_tables
seen = []
def tables_then_die(inputs, label):
    seen.append(label)
    if len(seen) == 2:  # the second model's run is open: die as a SIGKILL would
        os.kill(os.getpid(), signal.SIGKILL)
    real(inputs, label)
mlflow_log._model_tables = tables_then_die
track_report(config_from_params(json.loads(Path(sys.argv[1]).read_text())), Path(sys.argv[3]))
"""


@pytest.mark.slow  # a real SIGKILL in a child process (tests/test_kill_stages.py: every stage)
def test_killed_track_rerun_leaves_one_run_per_model(tmp_path: Path, report_output) -> None:
    params = _project(report_output, tmp_path)
    (tmp_path / "params.json").write_text(json.dumps(params))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLER,
            str(tmp_path / "params.json"),
            str(Path(__file__).parent),
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -9, proc.stderr[-2000:]
    mlflow.set_tracking_uri(params["tracking"]["tracking_uri"])
    exp = mlflow.get_experiment_by_name(params["tracking"]["experiment_name"])
    left = mlflow.search_runs([exp.experiment_id])
    assert "RUNNING" in set(left["status"])  # the killed run is left open in the store
    track_report(config_from_params(params), tmp_path)
    runs = _active_report_runs(params)
    assert sorted(runs["tags.stylisticbias.run_kind"]) == ["comparison", "model", "model"]
    assert runs[f"tags.{TAG_KEY}"].is_unique
    assert (runs["status"] == "FINISHED").all()
    deleted = mlflow.search_runs(
        [exp.experiment_id], run_view_type=mlflow.entities.ViewType.DELETED_ONLY
    )
    assert len(deleted) == 2  # the killed attempt's finished and open model runs
    assert set(runs[f"tags.{TAG_KIND}"]) == {"model", "comparison"}


# slow tier: builds its report in place (~5 CPU-s); fast sibling:
# test_existing_absolute_store_is_made_relative
@pytest.mark.slow
def test_moved_project_still_opens_logged_artifacts(
    tmp_path: Path, analysis_output, tmp_path_factory, monkeypatch
) -> None:
    proj = tmp_path
    params = _project(analysis_output, proj, MODELS[:1])
    params["tracking"]["tracking_uri"] = "sqlite:///mlflow.db"  # as in conf/tracking/mlflow.yaml
    monkeypatch.chdir(proj)  # DVC runs stages from the project root
    ids = track_report(config_from_params(params), proj) and json.loads(
        run_log_path(proj / RUNS_FILE).read_text()
    )
    readme = (proj / params["paths"]["reports"] / "README.md").read_text()
    exp = mlflow.get_experiment_by_name(params["tracking"]["experiment_name"])
    assert exp.artifact_location == f"mlruns/{exp.experiment_id}"
    moved = tmp_path_factory.mktemp("elsewhere") / "clone"
    shutil.move(proj, moved)
    monkeypatch.chdir(moved)
    mlflow.set_tracking_uri("sqlite:///mlflow.db")
    run = mlflow.get_run(ids["runs"]["comparison"])
    assert not Path(run.info.artifact_uri).is_absolute()
    assert mlflow.artifacts.load_text(f"{run.info.artifact_uri}/README.md") == readme
    client = mlflow.MlflowClient()
    assert "README.md" in {a.path for a in client.list_artifacts(run.info.run_id)}
    model_run = ids["runs"][MODELS[0]]
    table = mlflow.load_table("tables/sbs_by_scenario.json", run_ids=[model_run])
    assert len(table) > 0
    store = (moved / "mlflow.db").read_bytes().decode("latin-1")
    assert str(proj) not in store, store[store.index(str(proj)) - 200 :][:400]


def test_existing_absolute_store_is_made_relative(tmp_path: Path, monkeypatch) -> None:
    # a store written by MLflow directly (absolute artifact paths under its directory)
    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = mlflow.set_experiment("old")
    with mlflow.start_run() as run:
        mlflow.log_text("hello", "note.txt")
    assert Path(exp.artifact_location).is_absolute()
    from stylisticbias.tracking import ensure_experiment

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    spec = tracking_spec(
        {"tracking": {"enabled": True, "experiment_name": "old", "tracking_uri": uri}}
    )
    ensure_experiment(spec)
    got = mlflow.get_run(run.info.run_id)
    assert got.info.artifact_uri == f"mlruns/{exp.experiment_id}/{run.info.run_id}/artifacts"
    assert mlflow.artifacts.load_text(f"{got.info.artifact_uri}/note.txt") == "hello"


def test_stage_script_prints_one_error_line(tmp_path: Path, report_output) -> None:
    params = _project(report_output, tmp_path, MODELS[:1])
    shutil.copytree(project_root() / "conf", tmp_path / "conf", dirs_exist_ok=True)
    uri = f"http://127.0.0.1:{_closed_port()}"
    params["tracking"]["tracking_uri"] = uri
    (tmp_path / "params.yaml").write_text(dump_params(params))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "pipelines" / "track.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and uri in lines[0] and "unreachable" in lines[0], proc.stderr
