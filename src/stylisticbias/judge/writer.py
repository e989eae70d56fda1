"""The Lightning callback that writes judgment shards as batches finish (:class:`ShardWriter`).

What a shard is, how it is named, checked and found again: :mod:`stylisticbias.judge.shards`
(no Lightning: resuming, consolidating and the run log read shards without importing it). Its
names are re-exported here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as L
import pandas as pd
from lightning.pytorch.callbacks import BasePredictionWriter

from stylisticbias.judge.shards import (
    RANK_SUMMARY_GLOB,
    SHARD_GLOB,
    check_shard,
    concat_shards,
    content_key,
    record_keys,
    scan_shards,
    shard_name,
    write_shard,
)
from stylisticbias.outputs import atomic_write_bytes, atomic_write_json

__all__ = [
    "RANK_SUMMARY_GLOB",
    "SHARD_GLOB",
    "ShardWriter",
    "atomic_write_bytes",
    "atomic_write_json",
    "check_shard",
    "concat_shards",
    "content_key",
    "record_keys",
    "scan_shards",
    "shard_name",
    "write_shard",
]

log = logging.getLogger(__name__)


class ShardWriter(BasePredictionWriter):
    """Writes each predicted batch as one Parquet shard per rank; collects decode failures.

    ``prediction`` (from ``JudgeModule.predict_step``) is a dict with ``records``
    (JUDGMENT_RECORDS rows)
    and ``failures`` (``[{image_id, path, error}]``). Images already written by this writer are
    dropped (guards against any sampler padding), so no record is written twice. At the end of the
    epoch each rank writes ``_rank<r>.json`` (images, rows, seconds, failures, engine stats) and
    all ranks meet at a barrier, so rank 0 may consolidate. Engine statistics: an engine may
    expose ``last_stats`` (a dict for the last batch); numbers are summed over batches and
    ``image_tokens_per_image`` (a number or a list per image) is averaged.
    """

    def __init__(self, shard_dir: str | Path) -> None:
        super().__init__(write_interval="batch")
        self.shard_dir = Path(shard_dir)
        self.written: set[str] = set()
        self.failures: list[dict[str, str]] = []
        self.rows = 0
        self.shards = 0
        self._t0 = 0.0
        self.seconds = 0.0
        self.engine_stats: dict[str, Any] = {}
        self._token_counts: list[float] = []

    def _accumulate_stats(self, pl_module: L.LightningModule) -> None:
        """Fold the engine's per-batch ``last_stats`` into run totals (numbers are summed)."""
        stats = getattr(getattr(pl_module, "engine", None), "last_stats", None) or {}
        for k, v in stats.items():
            if k == "image_tokens_per_image":
                self._token_counts.extend(float(x) for x in (v if isinstance(v, list) else [v]))
            elif (
                isinstance(v, int | float)
                and not isinstance(v, bool)
                and not k.endswith(("_max", "_mean"))
            ):
                self.engine_stats[k] = self.engine_stats.get(k, 0) + v

    def on_predict_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.shard_dir.mkdir(parents=True, exist_ok=True)
        self._t0 = time.perf_counter()

    def write_on_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        prediction: Any,
        batch_indices: Sequence[int] | None,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        self.failures.extend(prediction.get("failures", []))
        self._accumulate_stats(pl_module)
        df: pd.DataFrame = prediction["records"]
        if df is None or df.empty:
            return
        dup = df["image_id"].isin(self.written)
        if dup.any():
            log.info(
                "rank %d: dropping %d duplicate image(s) of batch %d",
                trainer.global_rank,
                df.loc[dup, "image_id"].nunique(),
                batch_idx,
            )
            df = df.loc[~dup]
            if df.empty:
                return
        ids = df["image_id"].unique().tolist()
        path = self.shard_dir / shard_name(record_keys(df))
        write_shard(df.reset_index(drop=True), path)
        self.written.update(ids)
        self.rows += len(df)
        self.shards += 1

    def on_predict_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.seconds = time.perf_counter() - self._t0
        stats = dict(self.engine_stats)
        if self._token_counts:
            stats["image_tokens_per_image"] = sum(self._token_counts) / len(self._token_counts)
        atomic_write_json(
            self.shard_dir / f"_rank{trainer.global_rank:03d}.json",
            {
                "rank": trainer.global_rank,
                "images": len(self.written),
                "rows": self.rows,
                "shards": self.shards,
                "seconds": self.seconds,
                "failures": self.failures,
                "engine_stats": stats,
            },
        )
        if self.failures:
            log.warning(
                "rank %d: %d image(s) could not be decoded: %s",
                trainer.global_rank,
                len(self.failures),
                ", ".join(f["image_id"] for f in self.failures[:20]),
            )

    def on_predict_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        trainer.strategy.barrier("stylisticbias-judge-shards")
