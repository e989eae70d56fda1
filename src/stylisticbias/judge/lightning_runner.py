"""Batched prediction with Lightning: one engine replica per rank, images sharded across ranks.

``Trainer.predict`` drives a :class:`JudgeModule` (which wraps a :class:`JudgeEngine`) over a
:class:`~stylisticbias.judge.datamodule.JudgeDataModule`; a
:class:`~stylisticbias.judge.writer.ShardWriter` writes one Parquet shard per rank and batch.
Lightning's predict sampler is unpadded (each image goes to exactly one rank), and the writer
drops any image it has already written, so no record is written twice.

Devices, strategy and nodes come from the engine config's ``lightning:`` section, e.g.
``{accelerator: gpu, devices: 8, strategy: ddp, num_nodes: 2}``; launched under SLURM
(``srun``) or ``torchrun`` Lightning picks up the rank environment itself.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as L

from stylisticbias.cli import adopt_lightning_logging
from stylisticbias.judge.datamodule import JudgeDataModule
from stylisticbias.judge.engines.base import ImageItem, JudgeEngine
from stylisticbias.judge.predict_core import judge_batch, lightning_settings
from stylisticbias.judge.writer import ShardWriter

log = logging.getLogger(__name__)
adopt_lightning_logging()  # Lightning's handlers were attached by the import above


class JudgeModule(L.LightningModule):
    """A LightningModule whose ``predict_step`` is ``engine.judge(items, images)``."""

    def __init__(self, engine: JudgeEngine) -> None:
        super().__init__()
        self.engine = engine

    def setup(self, stage: str) -> None:
        """Load the engine's weights on this rank's device."""
        device = self.trainer.strategy.root_device if self._trainer is not None else self.device
        self.engine.setup(device=str(device))

    def transfer_batch_to_device(self, batch: Any, device: Any, dataloader_idx: int) -> Any:
        """Batches hold ids and PIL images, no tensors: the engine moves what it needs."""
        return batch

    def predict_step(self, batch: Mapping[str, list[Any]], batch_idx: int) -> dict[str, Any]:
        """Judge the decodable images of a batch; report the others as failures
        (:func:`~stylisticbias.judge.predict_core.judge_batch`)."""
        return judge_batch(self.engine, batch)


def make_trainer(
    engine_cfg: Mapping[str, Any], writer: ShardWriter, *, progress: bool = True
) -> L.Trainer:
    """A predict-only Trainer: no logger, no checkpoints, the shard writer as callback."""
    settings = lightning_settings(engine_cfg)
    return L.Trainer(
        accelerator=settings["accelerator"],
        devices=settings["devices"],
        strategy=settings["strategy"],
        num_nodes=int(settings["num_nodes"]),
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        enable_progress_bar=progress,
        use_distributed_sampler=True,  # predict: unpadded UnrepeatedDistributedSamplerWrapper
        callbacks=[writer],
    )


def predict(
    engine: JudgeEngine,
    items: Sequence[ImageItem],
    shard_dir: str | Path,
    engine_cfg: Mapping[str, Any],
    *,
    progress: bool = True,
) -> tuple[int, ShardWriter]:
    """Judge ``items`` into shards under ``shard_dir``; returns (global rank, writer).

    Every rank runs this; after it returns all ranks have written their shards and their
    ``_rank<r>.json`` summaries.
    """
    writer = ShardWriter(shard_dir)
    trainer = make_trainer(engine_cfg, writer, progress=progress)
    dm = JudgeDataModule(
        items,
        reads_pixels=engine.reads_pixels,
        batch_size=int(engine_cfg.get("image_batch_size", 1)),
        num_workers=int(engine_cfg.get("num_workers", 0)),
    )
    with warnings.catch_warnings():
        # our batches carry no tensors, so JudgeModule.transfer_batch_to_device is a no-op
        warnings.filterwarnings("ignore", message=".*overridden `transfer_batch_to_device`.*")
        # Lightning's own pytree helper still calls an API newer torch deprecates; not ours
        warnings.filterwarnings(
            "ignore", message=r".*isinstance\(treespec, LeafSpec\)`? is deprecated"
        )
        trainer.predict(JudgeModule(engine), datamodule=dm, return_predictions=False)
    return trainer.global_rank, writer
