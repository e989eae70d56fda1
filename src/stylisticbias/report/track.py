"""DVC stage ``track``: log the written report to MLflow (one run per model + a comparison, and
the SODA audit's run when it ran: :mod:`stylisticbias.report.soda_tracking`).

Split from the ``report`` stage so the report's files (committed to git) and the MLflow store
(local to each machine) are separate outputs: a fresh clone has the report already, but not its
runs, and ``dvc repro`` logs them because this stage's output is missing there.
``dvc repro -f track`` logs again (e.g. after deleting ``mlflow.db``).

Two files: the stage's output ``data/tracking/report_runs.json`` says *what* was logged (the
report's digest, the models, the configured tracking URI and experiment) and is the same on every
machine, so ``dvc.lock`` stays clean; the run ids, the resolved URI and the time go to the
run log beside it, ``data/tracking/report_runs.log.json`` (not a DVC output), with ``runs_url``:
the experiment's Runs tab in the MLflow UI, and ``run_urls``: each logged run's page (both in
the UI's classic "Model training" view: :func:`stylisticbias.tracking.run_url`).

Faults: the store is checked first (:func:`stylisticbias.tracking.preflight`), every MLflow call
is bounded by ``tracking.max_retries`` / ``tracking.timeout_s``, and a failure is one line naming
the URI; nothing is written then, so DVC reruns the stage, which replaces any runs an
interrupted attempt left (see :mod:`stylisticbias.report.mlflow_log`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import judged_models, project_root
from stylisticbias.family import family_of
from stylisticbias.outputs import atomic_write_json
from stylisticbias.spec import Config
from stylisticbias.spec.sections import PathsSpec

if TYPE_CHECKING:
    import pandas as pd

    from stylisticbias.report.markdown import FigureRecord

log = logging.getLogger(__name__)

#: The stage's output, relative to the project root (with the default ``paths.data=data``).
RUNS_FILE = Path("data") / "tracking" / "report_runs.json"


def runs_file(paths: PathsSpec, root: Path) -> Path:
    """The stage's output: ``<paths.data>/tracking/report_runs.json`` (``root / RUNS_FILE``
    by default; a sweep job's own data root otherwise)."""
    data = str(paths.data or "data")
    return root / data / RUNS_FILE.relative_to("data")


def written_figures(figures_dir: Path) -> list[FigureRecord]:
    """The report's PNGs (as the ``report`` stage wrote them), sorted by name."""
    from stylisticbias.report.markdown import FigureRecord

    return [FigureRecord(p.stem, p, "", "comparison") for p in sorted(figures_dir.glob("*.png"))]


def _jobs(config: Config, root: Path) -> dict[str, Config]:
    """Every job of ``config`` the check stage wrote under ``root``
    (``data/config/<protocol>/resolved.yaml``); a configuration whose jobs are not written
    there (a job's own configuration, a test's) stands for its one job."""
    import os

    from stylisticbias.config import PARAMS_ENV, load_config
    from stylisticbias.protocols import chosen, job_params_path

    if os.environ.get(PARAMS_ENV):  # a sweep job's (or one job's) own configuration
        return {config.protocol: config}
    names = chosen(config)
    paths = {p: job_params_path(p, root) for p in names}
    if names and all(path.is_file() for path in paths.values()):
        return {p: load_config(path) for p, path in paths.items()}
    return {config.protocol: config}


def track_report(
    config: Config, root: Path | None = None, jobs: Mapping[str, Config] | None = None
) -> Path:
    """Log every protocol's report and the audit to MLflow when ``tracking.enabled``; write
    RUNS_FILE and its run log.

    ``config`` is the experiment's root configuration, ``jobs`` its protocols' configurations
    (default: the jobs the check stage wrote, :func:`_jobs`). When the audit ran
    (``<paths.audit>/findings.json``), each judged model gets a parent run (``run_kind =
    model-audit``: every protocol's headline as metrics, ``headline.json`` and
    ``bias_card.md`` at its artifact root) and the models together one ``audit`` run (the
    cross-protocol leaderboard); each protocol's runs -- its family's ``track`` hook, run with
    the protocol's job -- become children: a model's run of the model's parent, the
    protocol's comparison run and the SODA audit's run of the ``audit`` run
    (:func:`stylisticbias.tracking.child_runs`, :mod:`stylisticbias.report.audit_runs`).
    """
    from stylisticbias.protocols import judged

    root = (root or project_root()).resolve()
    jobs = dict(jobs) if jobs is not None else _jobs(config, root)
    tracking = config.tracking
    out = runs_file(config.paths, root)
    out.parent.mkdir(parents=True, exist_ok=True)
    judged_jobs = {  # a generator audit (SODA) is no judged protocol, even alone
        p: j
        for p, j in jobs.items()
        if p not in config.generator_protocols and (p in judged(config) or len(jobs) == 1)
    }
    digests = {p: _report_digest(root / str(j.paths.reports)) for p, j in judged_jobs.items()}
    audit_dir = root / str(config.paths.audit)
    audit = audit_dir / "findings.json"
    record: dict[str, Any] = {
        "enabled": bool(tracking.enabled),
        "report_digest": _combined(digests),
        "protocols": digests,
        "models": judged_models(config),
        "tracking_uri": tracking.tracking_uri,
        "experiment_name": tracking.experiment_name,
    }
    if audit.is_file():
        record["audit_digest"] = audit_dir_digest(audit_dir)
    run_log: dict[str, Any] = {"runs": {}}
    parents: dict[str, str] = {}
    default: str | None = None
    prefix = len(judged_jobs) > 1 or audit.is_file()
    if record["enabled"] and audit.is_file():
        from stylisticbias.report.audit_runs import log_audit_parents

        parents, default = log_audit_parents(config, audit_dir, record["audit_digest"])
        run_log["runs"] |= {f"audit/{m}": rid for m, rid in parents.items()}
        run_log["runs"]["audit"] = default
    if record["enabled"]:  # each protocol's family's runs, under the audit's parents
        from stylisticbias.tracking import child_runs

        for p, job in judged_jobs.items():
            benchmark = load_benchmark(job.protocol)
            track = family_of(benchmark).hook("track")
            own: dict[str, Any] = {"runs": {}}
            with child_runs(parents, default, p if prefix else None):
                track(job, root, benchmark, digests[p], own)
            run_log["runs"] |= {(f"{p}/{k}" if prefix else k): v for k, v in own["runs"].items()}
            if own.get("tracking_uri"):
                run_log["tracking_uri"] = own["tracking_uri"]
        soda_jobs = [jobs[p] for p in config.generator_protocols if p in jobs]
        with child_runs({}, default):
            for job in soda_jobs or ([config] if len(jobs) == 1 else []):
                _track_soda(job, root, record, run_log)
    else:
        log.info("tracking.enabled is false: nothing logged to MLflow")
    if record["enabled"] and run_log["runs"]:
        run_log |= _ui_urls(config, run_log["runs"])
    run_log["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    atomic_write_json(run_log_path(out), {**record, **run_log})
    atomic_write_json(out, record)
    return out


def _combined(digests: Mapping[str, str]) -> str:
    """One protocol's report digest, or the md5 over every protocol's (name and digest)."""
    if len(digests) == 1:
        return next(iter(digests.values()))
    return hashlib.md5("".join(f"{p}:{d}\n" for p, d in digests.items()).encode()).hexdigest()


def audit_dir_digest(audit_dir: Path) -> str:
    """md5 over the audit's files (names and bytes), in name order."""
    h = hashlib.md5()
    for f in sorted(audit_dir.iterdir()):
        if f.is_file():
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def _track_soda(
    config: Config, root: Path, record: dict[str, Any], run_log: dict[str, Any]
) -> None:
    """The SODA audit (``<paths.soda>``), when it ran, as one more run (``run_kind=soda``)."""
    from stylisticbias.report.soda_tracking import audit_digest, log_soda, read_audit
    from stylisticbias.tracking import bounded, tracking_spec

    soda_dir = root / str(config.paths.soda)
    if read_audit(soda_dir) is None:
        return
    record.setdefault("soda_digest", audit_digest(soda_dir))
    spec = tracking_spec({"tracking": asdict(config.tracking)})
    with bounded(spec):
        run_id = log_soda(spec, soda_dir, asdict(config.soda), float(config.analysis.bootstrap.ci))
    if run_id is not None:
        run_log["runs"]["soda"] = run_id
        run_log.setdefault("tracking_uri", spec.tracking_uri)


def _add_interval_tables(tables: dict[str, pd.DataFrame], tables_dir: Path) -> None:
    """Load the tables whose intervals are logged (``run_metrics.FAMILIES``) that the report
    does not read itself (``sbs_overall``, ``sbs_by_variation_model``), where written."""
    from stylisticbias.analysis import table_registry as registry
    from stylisticbias.report.run_metrics import FAMILIES

    for name in dict.fromkeys(f.table for f in FAMILIES):
        if name not in tables and (tables_dir / registry.spec(name).file).is_file():
            tables[name] = registry.read_table(name, tables_dir)


def _ui_urls(config: Config, runs: dict[str, str]) -> dict[str, Any]:
    """The MLflow UI's addresses, in its classic view: ``runs_url`` (the experiment's Runs tab)
    and ``run_urls`` (``{run name: its page}``); see :func:`stylisticbias.tracking.run_url`."""
    import mlflow

    from stylisticbias.tracking import bounded, run_url, runs_url, tracking_spec

    spec = tracking_spec({"tracking": asdict(config.tracking)})
    with bounded(spec):
        exp = mlflow.MlflowClient(spec.tracking_uri).get_experiment_by_name(spec.experiment_name)
    if exp is None:
        return {"runs_url": None, "run_urls": {}}
    eid = str(exp.experiment_id)
    pages = {name: run_url(spec, eid, run_id) for name, run_id in runs.items()}
    log.info("MLflow run pages: %s", ", ".join(f"{k} {v}" for k, v in pages.items()))
    return {"runs_url": runs_url(spec, eid), "run_urls": pages}


def run_log_path(out: Path) -> Path:
    """``report_runs.json`` -> ``report_runs.log.json`` (run ids, resolved URI, time)."""
    return out.with_name(f"{out.stem}.log.json")


def _report_digest(reports: Path) -> str:
    """md5 over the report's README, metrics and tables (names and bytes), in name order."""
    h = hashlib.md5()
    files = [reports / "README.md", reports / "metrics.json", reports / "metrics_all.json"]
    files += sorted((reports / "tables").glob("*.csv"))
    for f in files:
        if f.is_file():
            h.update(f.relative_to(reports).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()
