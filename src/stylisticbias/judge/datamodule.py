"""The images to judge as a Lightning data module: ids in every batch, pixels only when needed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import lightning.pytorch as L
from torch.utils.data import DataLoader, Dataset

from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.judge.predict_core import collate_items, load_sample

log = logging.getLogger(__name__)


class ImageDataset(Dataset):
    """``ImageItem``s; decodes pixels only if ``reads_pixels``; bad files are reported."""

    def __init__(self, items: Sequence[ImageItem], reads_pixels: bool) -> None:
        self.items = list(items)
        self.reads_pixels = reads_pixels

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return load_sample(self.items[index], self.reads_pixels)


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
