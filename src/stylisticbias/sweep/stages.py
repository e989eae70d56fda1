"""Run the pipeline's stage scripts (``pipelines/*.py``) for one params file, as subprocesses.

Each stage reads the job's params through ``$STYLISTICBIAS_PARAMS`` (:func:`config.load_params`)
and nests its MLflow runs under ``$STYLISTICBIAS_PARENT_RUN_ID`` (:mod:`stylisticbias.tracking`).
Its output goes to the job's ``stages.log``; a failing stage becomes one line naming the stage,
its exit status, its last ``error:`` line and the log.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from stylisticbias.config import PARAMS_ENV, project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.tracking import PARENT_ENV

log = logging.getLogger(__name__)

#: environment variables a stage must not inherit from the sweep process (they would attach
#: its runs elsewhere: the DVC-sweep parent of ``report.mlflow_log``, a Hydra sweep id)
DROPPED_ENV = ("STYLISTICBIAS_SWEEP_ID", "DVC_EXP_NAME", "DVC_EXP_BASELINE_REV")


@dataclass(frozen=True)
class Stage:
    """One stage invocation: ``pipelines/<script>.py <args>``."""

    script: str
    args: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``judge simulated-weak``."""
        return " ".join((self.script, *self.args))


def dataset_stages() -> list[Stage]:
    """The stages that build a dataset."""
    return [Stage("faces"), Stage("variations")]


def pipeline_stages(models: Sequence[str], track: bool) -> list[Stage]:
    """The stages after the dataset, in DVC's order (judge/scores per model, then the rest)."""
    stages = [Stage("judge", (m,)) for m in models]
    stages += [Stage("scores", (m,)) for m in models]
    stages += [Stage("analyze"), Stage("report")]
    if track:
        stages.append(Stage("track"))
    return stages


def stage_env(params_file: Path, parent_run_id: str | None) -> dict[str, str]:
    """The environment of a stage: the job's params file and MLflow parent run."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env[PARAMS_ENV] = str(params_file.resolve())
    env.pop(PARENT_ENV, None)
    if parent_run_id:
        env[PARENT_ENV] = parent_run_id
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _last_error(log_file: Path, start: int) -> str:
    with log_file.open("rb") as fh:
        fh.seek(start)
        lines = fh.read().decode("utf-8", "replace").splitlines()
    errors = [ln for ln in lines if "error:" in ln.lower()] or lines[-1:]
    return errors[-1].strip() if errors else "no output"


def run_stages(
    stages: Sequence[Stage],
    params_file: Path,
    log_file: Path,
    *,
    label: str,
    parent_run_id: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, float]:
    """Run ``stages`` in order on ``params_file``; returns seconds per stage.

    Raises :class:`StylisticBiasError` (one line) at the first stage that fails.
    """
    run_env = dict(env) if env is not None else stage_env(params_file, parent_run_id)
    root = project_root()
    seconds: dict[str, float] = {}
    log_file.parent.mkdir(parents=True, exist_ok=True)
    for i, stage in enumerate(stages, 1):
        script = root / "pipelines" / f"{stage.script}.py"
        log.info("[%s] stage %d/%d: %s", label, i, len(stages), stage.label)
        t0 = time.perf_counter()
        with log_file.open("ab") as out:
            start = out.tell()
            out.write(f"### {stage.label}\n".encode())
            out.flush()
            proc = subprocess.run(
                [sys.executable, str(script), *stage.args],
                cwd=root,
                env=run_env,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            )
        seconds[stage.label] = time.perf_counter() - t0
        if proc.returncode != 0:
            raise StylisticBiasError(
                f"[{label}] stage {stage.label} failed (exit {proc.returncode}): "
                f"{_last_error(log_file, start)} (log: {log_file})"
            )
    return seconds
