"""What every judge runner shares, without Lightning: decoding a batch of images, judging it
(:func:`judge_batch`) and writing its records as shards (:class:`ShardSink`).

:mod:`.lightning_runner` drives these through ``Trainer.predict`` (engines with weights to place
on devices, one replica per rank); :mod:`.inline_runner` drives them in this process (engines
without weights: the simulated judge). Both write the same shards and the same rank summary.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from stylisticbias.dataset.imaging import to_rgb
from stylisticbias.judge.engines.base import ImageItem, JudgeEngine
from stylisticbias.judge.shards import record_keys, shard_name, write_shard
from stylisticbias.outputs import atomic_write_json

log = logging.getLogger(__name__)


#: the Trainer's placement when the engine config's ``lightning:`` section leaves a key unset
DEFAULT_LIGHTNING: dict[str, Any] = {
    "accelerator": "cpu",
    "devices": 1,
    "strategy": "auto",
    "num_nodes": 1,
}


def lightning_settings(engine_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Trainer device settings: ``DEFAULT_LIGHTNING`` updated by ``engine_cfg['lightning']``."""
    out = dict(DEFAULT_LIGHTNING)
    out.update({k: v for k, v in (engine_cfg.get("lightning") or {}).items() if v is not None})
    return out


def runs_inline(engine: JudgeEngine, engine_cfg: Mapping[str, Any]) -> bool:
    """Whether the judge stage runs ``engine`` in its own process (:mod:`.inline_runner`): an
    engine without weights (``needs_device`` False) placed on one device of one node, unless
    its config asks for Lightning (``runner: lightning``). Anything else -- weights to place,
    or several processes to shard the images over -- is Lightning's."""
    if engine.needs_device or engine_cfg.get("runner", "auto") == "lightning":
        return False
    s = lightning_settings(engine_cfg)
    return str(s["devices"]) == "1" and str(s["num_nodes"]) == "1"


def decode_image(path: str) -> Image.Image:
    """Open and fully decode an image as 8-bit RGB by the stated rule of
    :mod:`stylisticbias.dataset.imaging` (16-bit grayscale scaled, alpha on white; raises on a
    missing or corrupt file)."""
    with Image.open(path) as im:
        im.load()
        return to_rgb(im)


def load_sample(item: ImageItem, reads_pixels: bool) -> dict[str, Any]:
    """One image of a batch: ``item``, its decoded ``image`` (None without ``reads_pixels`` or
    on failure) and the decode ``error`` (None when it decoded)."""
    image, error = None, None
    if reads_pixels:
        try:
            image = decode_image(item.path)
        except Exception as exc:  # PIL raises many types for bad files
            error = f"{type(exc).__name__}: {exc}"
            log.warning("image %s could not be decoded (%s): %s", item.image_id, item.path, error)
    return {"item": item, "image": image, "error": error}


def collate_items(samples: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """Batch as plain lists (no tensors): ``items``, ``images``, ``errors``."""
    return {
        "items": [s["item"] for s in samples],
        "images": [s["image"] for s in samples],
        "errors": [s["error"] for s in samples],
    }


def judge_batch(engine: JudgeEngine, batch: Mapping[str, list[Any]]) -> dict[str, Any]:
    """Judge the decodable images of a batch; report the others as failures.

    Each record gets ``image_sha256``, the hash of the bytes of the image it judged.
    """
    items: list[ImageItem] = []
    images: list[Any] = []
    failures: list[dict[str, str]] = []
    for item, image, error in zip(batch["items"], batch["images"], batch["errors"]):
        if error is not None:
            failures.append({"image_id": item.image_id, "path": item.path, "error": error})
            continue
        items.append(item)
        images.append(image)
    records = engine.judge(items, images) if items else pd.DataFrame()
    if not records.empty:  # every record names the bytes it is about
        shas = {it.image_id: it.sha256 for it in items}
        records = records.assign(image_sha256=records["image_id"].map(shas).fillna(""))
    return {"records": records, "failures": failures}


class ShardSink:
    """Writes each judged batch as one Parquet shard of this rank; collects decode failures.

    ``prediction`` (from :func:`judge_batch`) is a dict with ``records`` (JUDGMENT_RECORDS rows)
    and ``failures`` (``[{image_id, path, error}]``). Images already written here are dropped
    (guards against any sampler padding), so no record is written twice. :meth:`finish` writes
    ``_rank<r>.json`` (images, rows, seconds, failures, engine stats). Engine statistics: an
    engine may expose ``last_stats`` (a dict for the last batch); numbers are summed over
    batches and ``image_tokens_per_image`` (a number or a list per image) is averaged.
    """

    def __init__(self, shard_dir: str | Path) -> None:
        self.shard_dir = Path(shard_dir)
        self.written: set[str] = set()
        self.failures: list[dict[str, str]] = []
        self.rows = 0
        self.shards = 0
        self._t0 = 0.0
        self.seconds = 0.0
        self.engine_stats: dict[str, Any] = {}
        self._token_counts: list[float] = []

    def start(self) -> None:
        """Before the first batch: the shard folder exists, the clock starts."""
        self.shard_dir.mkdir(parents=True, exist_ok=True)
        self._t0 = time.perf_counter()

    def accumulate_stats(self, engine: Any) -> None:
        """Fold the engine's per-batch ``last_stats`` into run totals (numbers are summed)."""
        stats = getattr(engine, "last_stats", None) or {}
        for k, v in stats.items():
            if k == "image_tokens_per_image":
                self._token_counts.extend(float(x) for x in (v if isinstance(v, list) else [v]))
            elif (
                isinstance(v, int | float)
                and not isinstance(v, bool)
                and not k.endswith(("_max", "_mean"))
            ):
                self.engine_stats[k] = self.engine_stats.get(k, 0) + v

    def write(self, prediction: Mapping[str, Any], engine: Any, rank: int, batch_idx: int) -> None:
        """One judged batch: its failures noted, its new records written as one shard."""
        self.failures.extend(prediction.get("failures", []))
        self.accumulate_stats(engine)
        df: pd.DataFrame = prediction["records"]
        if df is None or df.empty:
            return
        dup = df["image_id"].isin(self.written)
        if dup.any():
            log.info(
                "rank %d: dropping %d duplicate image(s) of batch %d",
                rank,
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

    def finish(self, rank: int) -> None:
        """After the last batch: this rank's ``_rank<r>.json`` summary."""
        self.seconds = time.perf_counter() - self._t0
        stats = dict(self.engine_stats)
        if self._token_counts:
            stats["image_tokens_per_image"] = sum(self._token_counts) / len(self._token_counts)
        atomic_write_json(
            self.shard_dir / f"_rank{rank:03d}.json",
            {
                "rank": rank,
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
                rank,
                len(self.failures),
                ", ".join(f["image_id"] for f in self.failures[:20]),
            )
