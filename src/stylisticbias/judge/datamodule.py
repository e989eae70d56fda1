"""The images to judge as a Lightning data module: ids in every batch, pixels only when needed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning.pytorch as L
import pandas as pd
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from stylisticbias.benchmark import DEMOGRAPHIC_AXES
from stylisticbias.dataset.imaging import to_rgb
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.spec.sections import IMAGE_SETS

log = logging.getLogger(__name__)


def build_items(
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    faces_dir: str | Path,
    variations_dir: str | Path,
    *,
    images: str = "evaluated",
) -> list[ImageItem]:
    """The images a judge run covers, sorted by ``image_id``.

    Base faces and variations with ``status == "ok"``; variations only where ``evaluated`` when
    ``images == "evaluated"`` (the paper's 34-value whitelist), all of them when ``"all"``. Paths
    in the tables are relative to the table's directory and become absolute here. ``attrs`` holds
    the demographic columns and, for variations, ``category``/``attribute``/``value``/``framing``;
    ``sha256`` the manifest's hash of the image bytes.
    """
    if images not in IMAGE_SETS:
        raise StylisticBiasError(f"judge.images: {images!r}; valid: {', '.join(IMAGE_SETS)}")
    faces_dir, variations_dir = Path(faces_dir), Path(variations_dir)
    items: list[ImageItem] = []
    demo = list(DEMOGRAPHIC_AXES)
    f = faces[faces["status"] == "ok"]
    for r in f.itertuples(index=False):
        attrs: dict[str, Any] = {a: getattr(r, a) for a in demo}
        attrs.update(category=None, attribute=None, value=None, framing="face")
        path = str(faces_dir / r.path)
        items.append(ImageItem(r.image_id, r.face_id, path, True, attrs, _sha(r.sha256)))
    v = variations[variations["status"] == "ok"]
    if images == "evaluated":
        v = v[v["evaluated"].astype(bool)]
    for r in v.itertuples(index=False):
        attrs = {a: getattr(r, a) for a in demo}
        attrs.update(category=r.category, attribute=r.attribute, value=r.value, framing=r.framing)
        path = str(variations_dir / r.path)
        items.append(ImageItem(r.image_id, r.face_id, path, False, attrs, _sha(r.sha256)))
    items.sort(key=lambda it: it.image_id)
    ids = [it.image_id for it in items]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise StylisticBiasError(f"faces/variations tables share image_id(s) {dup}")
    return items


def _sha(value: Any) -> str:
    """A manifest's sha256 cell as a string ("" when missing)."""
    return value if isinstance(value, str) else ""


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
