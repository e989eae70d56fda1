"""The run log of a judge run (``data/judgments/<model>.run.json``): what ran, how fast.

It describes the invocation, not the data: model, engine, decoding, counts, timing, invalid
rate, undecided mass, image tokens per image, simulated flag, MLflow run id. A fully resumed
run keeps the speed of the run that did the work.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.judge.engines.base import JudgeEngine
from stylisticbias.judge.shards import RANK_SUMMARY_GLOB

log = logging.getLogger(__name__)


def run_log_path(out: Path) -> Path:
    """The run log of the judgments directory ``out``: ``<out>.run.json``, beside it."""
    return out.parent / f"{out.name}.run.json"


def rank_summaries(shard_dir: Path) -> list[dict[str, Any]]:
    """The per-rank summaries (images, seconds, failures, engine stats) under ``shard_dir``."""
    out = []
    for p in sorted(shard_dir.glob(RANK_SUMMARY_GLOB)):
        try:
            out.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError):
            log.warning("unreadable rank summary %s", p.name)
    return out


#: the ledger of the provider batch jobs a stage submitted (``endpoint.batch``; written by
#: ``judge.engines.openai.batch``), read here as plain JSON
BATCH_LEDGER = Path("batch") / "ledger.json"
_BATCH_FIELDS = (
    "batch_id",
    "round",
    "lines",
    "status",
    "done",
    "failed",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
)


def batch_jobs(out: Path) -> list[dict[str, Any]]:
    """Every provider batch job recorded in ``out``'s ledger (id, lines, tokens, cost billed),
    for the run log; empty when the model judged online."""
    path = Path(out) / BATCH_LEDGER
    try:
        jobs = json.loads(path.read_text(encoding="utf-8")).get("jobs") or []
    except (OSError, ValueError, AttributeError):
        return []
    return [{k: j.get(k) for k in _BATCH_FIELDS} for j in jobs if isinstance(j, dict)]


def run_summary(
    df: pd.DataFrame,
    engine: JudgeEngine,
    engine_cfg: Mapping[str, Any],
    judge_cfg: Mapping[str, Any],
    rank_summaries: list[dict[str, Any]],
    out: Path,
    *,
    judged: int,
    resumed: int,
    seconds: float,
    n_failures: int,
) -> dict[str, Any]:
    """The run log's content. Speeds refer to the images judged by this invocation."""
    n_images = int(df["image_id"].nunique())
    n_scen = int(df["scenario_id"].nunique()) if len(df) else 0
    n_ord = int(df["ordering"].nunique()) if len(df) else 0
    drawn = df[df["seed"] > 0]
    n_seeds = int(drawn["seed"].nunique()) if len(drawn) else 0
    prompts_per_image = n_scen * n_ord * max(n_seeds, 1)
    judged_images = sum(int(s.get("images", 0)) for s in rank_summaries)
    wall = max([float(s.get("seconds", 0.0)) for s in rank_summaries] + [0.0]) or seconds
    stats = [s.get("engine_stats") or {} for s in rank_summaries]
    tokens = [
        s["image_tokens_per_image"] for s in stats if s.get("image_tokens_per_image") is not None
    ]
    summary: dict[str, Any] = {
        "model": engine.model_name,
        "engine": engine_cfg.get("name"),
        "decoding": engine_cfg.get("decoding"),
        "simulated": bool(df["simulated"].any())
        if len(df)
        else engine_cfg.get("name") == "simulated",
        "n_images": n_images,
        "n_records": len(df),
        "n_failures": n_failures,
        "n_scenarios": n_scen,
        "n_orderings": n_ord,
        "n_seeds": n_seeds,
        "images_judged": judged_images,
        "images_per_rank": [int(s.get("images", 0)) for s in rank_summaries],
        "images_resumed": resumed,
        "seconds": round(wall, 3) if judged_images else None,
        "images_per_s": judged_images / wall if judged_images and wall > 0 else None,
        "prompts_per_s": judged_images * prompts_per_image / wall
        if judged_images and wall > 0
        else None,
        "invalid_rate": float(df["p_invalid"].mean()) if len(df) else None,
        "invalid_share_drawn": float((drawn["choice"] == "invalid").mean()) if len(drawn) else None,
        "undecided_mass": float(df["p_undecided"].mean()) if len(df) else None,
        "image_tokens_per_image": float(sum(tokens) / len(tokens)) if tokens else None,
        "orderings": list(judge_cfg.get("orderings", [])),
        "seeds": list(judge_cfg.get("seeds", [])),
        "temperature": judge_cfg.get("temperature"),
        "engine_stats": stats,
    }
    batch = batch_jobs(out)
    if batch:
        summary["batch_jobs"] = batch
    if not judged_images:  # fully resumed: keep the speed of the run that did the work
        prev = run_log_path(out)
        if prev.exists():
            try:
                old = json.loads(prev.read_text(encoding="utf-8"))
                keep = (
                    "seconds",
                    "images_per_s",
                    "prompts_per_s",
                    "image_tokens_per_image",
                    "mlflow_run_id",
                )
                for k in keep:
                    if summary.get(k) is None:
                        summary[k] = old.get(k)
            except (OSError, json.JSONDecodeError):
                pass
    return summary
