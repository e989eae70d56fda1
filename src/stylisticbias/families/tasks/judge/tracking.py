"""The run log and MLflow judge run of a task protocol's judge stage, on every engine.

Both routes of :func:`~stylisticbias.families.tasks.judge.judging.judge_task_protocol` (the
simulated judge's planted answers, the ``hf``/``openai`` engines' asks) end here: the run log
``<judgments>/<model>.run.json`` (not a DVC output: its timings differ between runs) and one
``judge/<model>`` run with the same metric keys as a binary protocol's judge run
(:data:`stylisticbias.tracking.JUDGE_METRICS`: invalid rate, undecided mass, records, faces,
seconds, speeds) plus the engine's transport counters (``api_*``: requests, cache hits, retries,
tokens, cost). A run that judged nothing (every batch resumed) logs nothing, as for binary
protocols; in a sweep job the run nests under the job's run (``$STYLISTICBIAS_PARENT_RUN_ID``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.outputs import atomic_write_json
from stylisticbias.spec.sections import JudgeSpec, TrackingSpec

log = logging.getLogger(__name__)

#: summary keys kept from the run that did the work when a rerun judged nothing
_KEEP = ("seconds", "images_per_s", "prompts_per_s", "mlflow_run_id")


def task_run_log(out: Path) -> Path:
    """``<judgments>/<model>.run.json`` beside the model's records directory ``out``."""
    return out.parent / f"{out.name}.run.json"


def task_run_params(
    model: str, model_cfg: Mapping[str, Any], judge: JudgeSpec, tasks: Sequence[int], protocol: str
) -> dict[str, Any]:
    """The judge run's params every engine shares (an engine adds its own ``run_params``)."""
    engine = dict(model_cfg.get("engine") or {})
    return {
        "model": model,
        "engine": engine.get("name"),
        "decoding": engine.get("decoding"),
        "protocol": protocol,
        "tasks": list(tasks),
        "seeds": list(judge.seeds),
        "temperature": judge.temperature,
    }


def task_summary(
    records: pd.DataFrame,
    model: str,
    model_cfg: Mapping[str, Any],
    *,
    units_judged: int,
    prompts_judged: int,
    seconds: float,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The run log of one task judge run: sizes, invalid rate and undecided mass of the
    records; speeds over the units (faces or pairs) this invocation judged."""
    engine = dict(model_cfg.get("engine") or {})
    faces = {i for ids in records["image_ids"] for i in str(ids).split("|") if i}
    judged = units_judged > 0 and seconds > 0
    return {
        "model": model,
        "engine": engine.get("name"),
        "decoding": engine.get("decoding"),
        "simulated": engine.get("name") == "simulated",
        "n_records": len(records),
        "n_tasks": int(records["task_id"].nunique()) if len(records) else 0,
        "n_images": len(faces),
        "n_units": int(records["unit"].nunique()) if len(records) else 0,
        "n_failures": 0,
        "images_judged": units_judged,
        "seconds": round(seconds, 3) if units_judged else None,
        "images_per_s": units_judged / seconds if judged else None,
        "prompts_per_s": prompts_judged / seconds if judged else None,
        "invalid_rate": float((records["outcome"] == "invalid").mean()) if len(records) else None,
        "undecided_mass": float(records["undecided"].mean()) if len(records) else None,
        **dict(extra or {}),
    }


def finish_task_run(
    out: Path,
    summary: dict[str, Any],
    tracking: TrackingSpec,
    run_params: Mapping[str, Any],
) -> dict[str, Any]:
    """Write the run log and log the judge run (when this invocation judged anything).

    A tracking failure is a warning: it never loses the finished records.
    """
    path = task_run_log(out)
    if not summary.get("images_judged") and path.is_file():  # keep the working run's numbers
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            summary.update({k: old[k] for k in _KEEP if summary.get(k) is None and k in old})
        except (OSError, json.JSONDecodeError):
            pass
    atomic_write_json(path, summary)
    if not summary.get("images_judged"):
        log.info("%s: nothing judged; no MLflow run opened", summary.get("model"))
        return summary
    from stylisticbias.tracking import log_judge_run

    try:
        run_id = log_judge_run(tracking, run_params, summary)
    except Exception as exc:  # tracking must never lose finished records
        log.warning(
            "MLflow logging failed (%s: %s); task records are written", type(exc).__name__, exc
        )
        run_id = None
    if run_id:
        summary["mlflow_run_id"] = run_id
        atomic_write_json(path, summary)
    return summary
