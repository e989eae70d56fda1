"""The Lightning callback that writes judgment shards as batches finish (:class:`ShardWriter`,
over :class:`~stylisticbias.judge.predict_core.ShardSink`).

What a shard is, how it is named, checked and found again: :mod:`stylisticbias.judge.shards`
(no Lightning: resuming, consolidating and the run log read shards without importing it). Its
names are re-exported here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as L
from lightning.pytorch.callbacks import BasePredictionWriter

from stylisticbias.judge.predict_core import ShardSink
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


class ShardWriter(BasePredictionWriter, ShardSink):
    """The Lightning callback of a :class:`~stylisticbias.judge.predict_core.ShardSink`: each
    predicted batch is written as one shard of its rank as it finishes; at the end of the epoch
    each rank writes ``_rank<r>.json`` and all ranks meet at a barrier, so rank 0 may
    consolidate."""

    def __init__(self, shard_dir: str | Path) -> None:
        BasePredictionWriter.__init__(self, write_interval="batch")
        ShardSink.__init__(self, shard_dir)

    def on_predict_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.start()

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
        engine = getattr(pl_module, "engine", None)
        self.write(prediction, engine, trainer.global_rank, batch_idx)

    def on_predict_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.finish(trainer.global_rank)

    def on_predict_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        trainer.strategy.barrier("stylisticbias-judge-shards")
