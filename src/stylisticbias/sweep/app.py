"""The Hydra application ``python -m stylisticbias.sweep`` (config ``conf/sweep.yaml``).

One job = one composed config = one pipeline run in the job's directory::

    python -m stylisticbias.sweep -m model=simulated-strong,simulated-weak \
        'judge.seeds=[1],[2]' faces.n=8

Before Hydra starts, :func:`cli` composes and checks every job of the sweep, so a bad override
fails in one line (exit status 2) before any job runs. A job that fails logs one ``error:`` line,
is marked failed in its ``job.json`` and its MLflow run, and the sweep goes on; the command's
exit status is then 1.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig

from stylisticbias.config import compose, conf_dir, dump_params
from stylisticbias.errors import StylisticBiasError
from stylisticbias.sweep import callback
from stylisticbias.sweep.dataset import ensure_dataset, link_dataset
from stylisticbias.sweep.runs import close_run, open_run, run_is_live
from stylisticbias.sweep.spec import (
    JOB_PATHS,
    JobSpec,
    check,
    dataset_key,
    job_name,
    job_params,
    judged_models,
    plan_sweep,
    with_paths,
)
from stylisticbias.sweep.stages import dataset_stages, pipeline_stages, run_stages
from stylisticbias.sweep.state import JOB_FILE, SWEEP_FILE, read_json, write_json
from stylisticbias.tracking import tracking_cfg, tracking_spec

log = logging.getLogger("stylisticbias.sweep")

CONFIG_NAME = "sweep"
#: the job's own log of its stage subprocesses
STAGES_LOG = "stages.log"
#: params of the job's child run besides its overrides
RUN_PARAMS = ("faces.n", "faces.sampler", "judge.seeds", "judge.temperature", "judge.images")


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """``{"sbs": {"overall": 0.1}}`` -> ``{"sbs.overall": 0.1}`` (numbers only)."""
    out: dict[str, float] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out[f"{prefix}{k}"] = float(v)
    return out


def job_metrics(job: JobSpec) -> dict[str, float]:
    """The job's ``reports/metrics.json``, flattened (prefixed by model when several)."""
    from stylisticbias.sweep.state import read_json as read

    metrics = read(Path(job.params["paths"]["reports"]) / "metrics.json")
    if len(job.models) == 1 and isinstance(metrics.get(job.models[0]), dict):
        return flatten(metrics[job.models[0]])
    return flatten(metrics)


def resolve_job(params: dict[str, Any], name: str, job_dir: Path, sampler: str | None) -> JobSpec:
    """The job's spec from its composed config: checked, paths inside ``job_dir``."""
    composed = job_params(params, sampler)
    check(composed)
    key = dataset_key(composed)
    out = with_paths(composed, job_dir, JOB_PATHS)
    out["tracking"] = tracking_cfg(out)  # a relative SQLite URI anchored where the sweep runs
    check(out)
    models = tuple(judged_models(out))
    return JobSpec(name=name, job_dir=job_dir, params=out, dataset_key=key, models=models)


def run_params(job: JobSpec, overrides: Sequence[str]) -> dict[str, Any]:
    """What the job's child run logs as params."""
    from stylisticbias.config import subtree
    from stylisticbias.sweep.spec import override_key

    out: dict[str, Any] = {"overrides": " ".join(overrides), "dataset": job.dataset_key}
    out["models"] = ",".join(job.models)
    for key in RUN_PARAMS:
        value = subtree(job.params, key)
        out[key] = ",".join(map(str, value)) if isinstance(value, list) else value
    for o in overrides:
        out.setdefault(override_key(o), o.split("=", 1)[-1])
    return out


def execute(
    job: JobSpec, base: dict[str, Any], sweep_dir: Path, datasets: Path, parent: str | None
) -> dict[str, Any]:
    """Run one job (dataset, then its stages); returns its ``job.json`` record.

    ``base``: what the record always holds (name, number, overrides, run params). A job whose
    record says it finished with the same params digest is not run again (its child run is
    re-created if it was deleted).
    """
    record_path = job.job_dir / JOB_FILE
    previous = read_json(record_path)
    spec = tracking_spec(job.params)
    record: dict[str, Any] = {**previous, **base, "digest": job.digest}
    record.update(dataset=job.dataset_key, models=list(job.models))
    if previous.get("status") == "done" and previous.get("digest") == job.digest:
        log.info("[%s] finished before: reusing its outputs (%s)", job.name, job.job_dir)
        if spec.enabled and not run_is_live(spec, previous.get("run_id")):
            run_id = open_run(spec, job.name, "sweep-job", f"hydra:{sweep_dir}", parent=parent)
            close_run(spec, run_id, params=record["params"], metrics=previous["metrics"])
            record["run_id"] = run_id
            write_json(record_path, record)
        return record
    job.job_dir.mkdir(parents=True, exist_ok=True)
    job.params_file.write_text(dump_params(job.params), encoding="utf-8")
    run_id = None
    if spec.enabled:
        same = previous.get("digest") == job.digest
        run_id = open_run(
            spec,
            job.name,
            "sweep-job",
            f"hydra:{sweep_dir}",
            parent=parent,
            tags={"sweep_job": record.get("num"), "models": ",".join(job.models)},
            reuse=previous.get("run_id") if same else None,
        )
    record.update(status="running", run_id=run_id, error=None)
    write_json(record_path, record)
    t0 = time.perf_counter()
    log_file = job.job_dir / STAGES_LOG
    try:
        build = ensure_dataset(
            job.params,
            datasets,
            lambda pf, key: run_stages(dataset_stages(), pf, log_file, label=f"dataset {key}"),
        )
        link_dataset(build, job.params)
        run_stages(
            pipeline_stages(job.models, track=spec.enabled),
            job.params_file,
            log_file,
            label=job.name,
            parent_run_id=run_id,
        )
        metrics = job_metrics(job)
    except StylisticBiasError as exc:
        log.error("error: %s", exc)
        record.update(status="failed", error=str(exc))
        write_json(record_path, record)
        if run_id:
            close_run(spec, run_id, params=record.get("params"), failed=True)
        return record
    record.update(status="done", metrics=metrics, seconds=round(time.perf_counter() - t0, 1))
    if run_id:
        close_run(
            spec,
            run_id,
            params=record.get("params"),
            metrics=metrics,
            texts={"params.yaml": job.params_file.read_text(encoding="utf-8")},
        )
    write_json(record_path, record)
    log.info("[%s] done in %.1f s (%s)", job.name, record["seconds"], job.job_dir)
    return record


def run_job(cfg: DictConfig) -> dict[str, Any]:
    """The task function's body: resolve, check and run this job; returns its record."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    job_dir = Path(hc.runtime.output_dir).resolve()
    sweep_dir = Path(str(hc.sweep.dir)).resolve() if multirun else job_dir
    state = read_json(sweep_dir / SWEEP_FILE) if multirun else {}
    overrides = list(hc.overrides.task)
    plan = plan_sweep(overrides)
    swept = state.get("swept") or list(plan.swept)
    sampler = state.get("sampler") if multirun else plan.sampler
    name = job_name(overrides, swept)
    params = callback.pipeline_config(cfg)
    datasets = callback.datasets_dir(params, sweep_dir)
    num = int(hc.job.num) if multirun else 0
    base = {"name": name, "num": num, "overrides": overrides}
    try:
        job = resolve_job(params, name, job_dir, sampler)
    except StylisticBiasError as exc:
        log.error("error: [%s] %s", name, exc)
        record = {**base, "status": "failed", "error": str(exc)}
        write_json(job_dir / JOB_FILE, record)
        callback.FAILED.append(name)
        return record
    base["params"] = run_params(job, overrides)
    log.info("[%s] job %d: %s", name, num, job_dir)
    record = execute(job, base, sweep_dir, datasets, state.get("parent_run_id"))
    if record.get("status") != "done":
        callback.FAILED.append(name)
    return record


@hydra.main(config_path=str(conf_dir()), config_name=CONFIG_NAME, version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Hydra's task function: one job of the sweep."""
    run_job(cfg)


#: command-line flags after which the preflight is skipped (Hydra's own information commands)
_INFO_FLAGS = (
    "--help",
    "-h",
    "--hydra-help",
    "--info",
    "-i",
    "--cfg",
    "-c",
    "--resolve",
    "--shell-completion",
    "-sc",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--package",
    "-p",
    "--experimental-rerun",
)


def preflight(argv: Sequence[str]) -> int:
    """Compose and check every job of the sweep ``argv`` describes; returns the job count.

    Raises :class:`StylisticBiasError` (one line) at the first bad override or job config.
    """
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    overrides = [a for a in argv if not a.startswith("-")]
    plan = plan_sweep(overrides)
    parsed = OverridesParser.create().parse_overrides(list(plan.overrides))
    batches = BasicSweeper.split_arguments(parsed, None)
    jobs = [list(job) for batch in batches for job in batch]
    scratch = Path("multirun") / ".preflight"
    for job in jobs:
        try:
            params = compose(job, config_name=CONFIG_NAME)
            resolve_job(params, " ".join(job), scratch.resolve(), plan.sampler)
        except StylisticBiasError as exc:
            raise StylisticBiasError(
                f"job {' '.join(job) or '(defaults)'}: {with_choices(str(exc))}"
            ) from None
    return len(jobs)


def with_choices(message: str) -> str:
    """Hydra's "Could not find 'model/x'" plus the group's valid options (Hydra lists them on
    further lines, which a one-line error drops)."""
    import re

    from stylisticbias.config import available

    found = re.search(r"Could not find '([\w-]+)/([^']+)'", message)
    if not found or "valid:" in message:
        return message
    return f"{message}; valid: {', '.join(available(found.group(1)))}"


def cli(argv: Sequence[str] | None = None) -> None:
    """``python -m stylisticbias.sweep [-m] [overrides]``: check every job, then run Hydra."""
    from stylisticbias.cli import setup_logging

    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a.split("=", 1)[0] in _INFO_FLAGS for a in argv):
        setup_logging()
        try:
            n = preflight(argv)
        except StylisticBiasError as exc:
            log.error("error: %s", exc)
            sys.exit(2)
        log.info("sweep: %d job(s) checked", n)
    callback.FAILED.clear()
    main()
    if callback.FAILED:
        sys.exit(1)
