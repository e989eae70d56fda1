"""The sweep's start and end (a Hydra :class:`~hydra.experimental.callback.Callback`).

``on_multirun_start`` checks the sweep's overrides, opens the MLflow parent run (named after
the overrides; reopened when the sweep directory is resumed) and writes ``sweep.json`` for the
jobs. ``on_multirun_end`` reads every job's ``job.json``, writes ``comparison.csv`` and logs the
comparison run (a table of every job + per-job headline metrics) under the parent.
Both run in the launching process, whichever launcher runs the jobs.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from stylisticbias.sweep.runs import close_run, log_comparison, open_run, table_csv
from stylisticbias.sweep.spec import metric_key, plan_sweep
from stylisticbias.sweep.state import (
    COMPARISON_FILE,
    SWEEP_FILE,
    job_records,
    read_json,
    write_json,
)
from stylisticbias.tracking import tracking_spec

log = logging.getLogger(__name__)

#: jobs that failed in the last sweep of this process (the CLI's exit status)
FAILED: list[str] = []


def pipeline_config(config: DictConfig) -> dict[str, Any]:
    """The task part of a Hydra config (no ``hydra`` node), resolved: one protocol's job (the
    experiment's first protocol, or ``protocol=<name>``; the job's overrides win over the
    protocol's settings, as :func:`stylisticbias.config.compose` does)."""
    from stylisticbias.config import as_protocol_job

    keys = [k for k in config if k != "hydra"]
    overrides = list(OmegaConf.select(config, "hydra.overrides.task", default=[]) or [])
    task = OmegaConf.masked_copy(config, keys)
    task = as_protocol_job(task, overrides, "the sweep job")
    out = OmegaConf.to_container(task, resolve=True)
    assert isinstance(out, dict)
    return out  # type: ignore[return-value]


def datasets_dir(params: dict[str, Any], sweep_dir: Path) -> Path:
    """Where the sweep's shared dataset builds live (``sweep.datasets``, default
    ``<sweep dir>/datasets``)."""
    raw = (params.get("sweep") or {}).get("datasets")
    return Path(raw).resolve() if raw else sweep_dir / "datasets"


class SweepCallback(Callback):
    """Parent run + ``sweep.json`` at the start, comparison at the end."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Plan the sweep, open (or reopen) its parent run, write ``sweep.json``."""
        FAILED.clear()
        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        plan = plan_sweep(list(config.hydra.overrides.task))
        state = read_json(sweep_dir / SWEEP_FILE)
        params = pipeline_config(config)
        spec = tracking_spec(params)
        sweep_id = f"hydra:{sweep_dir}"
        parent = None
        if spec.enabled:
            parent = open_run(
                spec,
                f"sweep {plan.name}",
                "sweep",
                sweep_id,
                tags={"sweep_dir": sweep_dir.name},
                reuse=state.get("parent_run_id"),
            )
            log.info("sweep %s: MLflow parent run %s (%s)", plan.name, parent, spec.tracking_uri)
        write_json(
            sweep_dir / SWEEP_FILE,
            {
                **state,
                "name": plan.name,
                "sweep_id": sweep_id,
                "overrides": list(plan.overrides),
                "swept": list(plan.swept),
                "sampler": plan.sampler,
                "parent_run_id": parent,
                "tracking_uri": spec.tracking_uri if spec.enabled else None,
            },
        )

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Collect every job, write ``comparison.csv``, log the comparison run, end the parent."""
        sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
        state = read_json(sweep_dir / SWEEP_FILE)
        params = pipeline_config(config)
        records = job_records(sweep_dir, datasets_dir(params, sweep_dir))
        rows = [comparison_row(r) for r in records]
        (sweep_dir / COMPARISON_FILE).write_text(table_csv(rows), encoding="utf-8")
        failed = [r["name"] for r in rows if r["status"] != "done"]
        FAILED[:] = failed
        spec = tracking_spec(params)
        parent = state.get("parent_run_id")
        if spec.enabled and parent:
            state["comparison_run_id"] = log_comparison(
                spec, parent, str(state["sweep_id"]), rows, previous=state.get("comparison_run_id")
            )
            close_run(
                spec,
                parent,
                params={"overrides": state.get("name"), "swept": ",".join(state.get("swept", []))},
                metrics={"n_jobs": len(rows), "n_failed": len(failed)},
                failed=bool(failed),
            )
            write_json(sweep_dir / SWEEP_FILE, state)
        log.info(
            "sweep %s: %d job(s), %d failed; table: %s",
            state.get("name"),
            len(rows),
            len(failed),
            sweep_dir / COMPARISON_FILE,
        )
        for name in failed:
            log.error("error: job %s failed (see its job.json and stages.log)", name)


def comparison_row(record: dict[str, Any]) -> dict[str, Any]:
    """One row of the comparison table: the job, its status and run, then its metrics."""
    name = str(record.get("name"))
    row: dict[str, Any] = {
        "job": record.get("num"),
        "job_key": metric_key(name),
        "name": name,
        "status": record.get("status", "unknown"),
        "run_id": record.get("run_id"),
        "dataset": record.get("dataset"),
        "models": ",".join(record.get("models") or []),
        "error": record.get("error"),
    }
    row.update(record.get("metrics") or {})
    return row
