"""The images to judge as a Lightning data module: ids in every batch, pixels only when needed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import lightning.pytorch as L
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from stylisticbias.dataset.imaging import to_rgb
from stylisticbias.judge.engines.base import ImageItem

log = logging.getLogger(__name__)


def decode_image(path: str) -> Image.Image:
    """Open and fully decode an image as 8-bit RGB by the stated rule of
    :mod:`stylisticbias.dataset.imaging` (16-bit grayscale scaled, alpha on white; raises on a
    missing or corrupt file)."""
    with Image.open(path) as im:
        im.load()
        return to_rgb(im)


class ImageDataset(Dataset):
    """``ImageItem``s; decodes pixels only if ``reads_pixels``; bad files are reported."""

    def __init__(self, items: Sequence[ImageItem], reads_pixels: bool) -> None:
        self.items = list(items)
        self.reads_pixels = reads_pixels

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        item = self.items[index]
        image, error = None, None
        if self.reads_pixels:
            try:
                image = decode_image(item.path)
            except Exception as exc:  # PIL raises many types for bad files
                error = f"{type(exc).__name__}: {exc}"
                log.warning(
                    "image %s could not be decoded (%s): %s", item.image_id, item.path, error
                )
        return {"item": item, "image": image, "error": error}


def collate_items(samples: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """Batch as plain lists (no tensors): ``items``, ``images``, ``errors``."""
    return {
        "items": [s["item"] for s in samples],
        "images": [s["image"] for s in samples],
        "errors": [s["error"] for s in samples],
    }


class JudgeDataModule(L.LightningDataModule):
    """Serves the images of a judge run in batches; Lightning shards them across ranks."""

    def __init__(
        self,
        items: Sequence[ImageItem],
        *,
        reads_pixels: bool,
        batch_size: int = 1,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        self.items = list(items)
        self.reads_pixels = reads_pixels
        self.batch_size = int(batch_size)
        self.num_workers = int(num_workers)

    def predict_dataloader(self) -> DataLoader:
        """Unshuffled batches of ``ImageItem``s (Lightning adds an unpadded distributed sampler)."""
        return DataLoader(
            ImageDataset(self.items, self.reads_pixels),
            batch_size=self.batch_size,
            shuffle=False,
            num_workers=self.num_workers,
            collate_fn=collate_items,
            persistent_workers=False,
        )
