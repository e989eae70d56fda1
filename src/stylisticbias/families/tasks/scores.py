"""The scores stage of a task protocol (the family's ``scores`` hook): one model's task records
counted per task x group x outcome, with the exact expected counts of the records'
distributions (``data/scores/model=<model>/part-0.parquet``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from stylisticbias.benchmark import Benchmark
from stylisticbias.judge.protocol.tasks.records import RECORDS_FILE, read_task_records
from stylisticbias.outputs import atomic_path
from stylisticbias.scores import Source, stage_dir
from stylisticbias.scores_ahead import JudgmentsAhead
from stylisticbias.spec import Config

log = logging.getLogger(__name__)


def write_task_record_scores(
    model_name: str,
    config: Config,
    benchmark: Benchmark,
    *,
    source: Source = "auto",
    ahead: JudgmentsAhead | None = None,
) -> Path:
    """The scores of a task protocol: its task records counted (:func:`write_task_scores`)."""
    return write_task_scores(
        model_name, stage_dir(config, "judgments"), stage_dir(config, "scores")
    )


def task_scores(records: pd.DataFrame) -> pd.DataFrame:
    """Per task x group x outcome of a task protocol's records: the answers' ``count`` and
    the exact expected count ``mass`` (the summed outcome distributions; NaN for a free
    number), plus the mean ``value`` of numeric answers."""
    rows = []
    for (tid, group), g in records.groupby(["task_id", "first"], sort=True):
        dists = [json.loads(d) for d in g["dist"] if d]
        outcomes = sorted(set(g["outcome"]) | {o for d in dists for o in d})
        for o in outcomes:
            mass = sum(d.get(o, 0.0) for d in dists) if dists else float("nan")
            sel = g["outcome"] == o
            rows.append(
                {
                    "task_id": int(tid),
                    "group": str(group),
                    "outcome": o,
                    "count": int(sel.sum()),
                    "mass": float(mass),
                    "n": len(g),
                    "mean_value": float(g.loc[sel, "value"].mean()),
                }
            )
    return pd.DataFrame(rows)


def write_task_scores(model_name: str, judgments: Path, scores: Path) -> Path:
    """Score one model's task records into ``data/scores/model=<model>/part-0.parquet``."""
    records = read_task_records(judgments / model_name / RECORDS_FILE)
    out = scores / f"model={model_name}"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "part-0.parquet"
    with atomic_path(path) as tmp:
        task_scores(records).to_parquet(tmp, index=False)
    log.info("%s: task scores -> %s", model_name, path)
    return path
