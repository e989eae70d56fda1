"""Judging in this process, for engines that hold no weights (``JudgeEngine.needs_device`` is
False: the simulated judge): the same batches, records, shards and rank summary as
:mod:`.lightning_runner`, without a Trainer (and without importing Lightning, seconds of every
judge stage's start). Engines with weights are placed on devices by Lightning."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from stylisticbias.judge.engines.base import ImageItem, JudgeEngine
from stylisticbias.judge.predict_core import ShardSink, collate_items, judge_batch, load_sample


def predict(
    engine: JudgeEngine,
    items: Sequence[ImageItem],
    shard_dir: str | Path,
    engine_cfg: Mapping[str, Any],
    *,
    progress: bool = True,
) -> tuple[int, ShardSink]:
    """Judge ``items`` into shards under ``shard_dir`` in batches of the engine's
    ``image_batch_size``, in order; returns (rank 0, the sink). The signature of
    :func:`.lightning_runner.predict`."""
    size = max(1, int(engine_cfg.get("image_batch_size", 1)))
    sink = ShardSink(shard_dir)
    engine.setup(device="cpu")
    sink.start()
    with tqdm(total=len(items), desc="judging", unit="img", disable=not progress) as bar:
        for batch_idx, at in enumerate(range(0, len(items), size)):
            chunk = items[at : at + size]
            batch = collate_items([load_sample(it, engine.reads_pixels) for it in chunk])
            sink.write(judge_batch(engine, batch), engine, 0, batch_idx)
            bar.update(len(chunk))
    sink.finish(0)
    return 0, sink
