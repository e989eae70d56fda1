"""Pixel-level import checks (missing, unreadable, corrupt image) and placing images in data/."""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from stylisticbias.dataset.importer.sources import Problem

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageInfo:
    """What the judge will see: the bytes' sha256 and the decoded size."""

    sha256: str
    width: int
    height: int
    ext: str


def inspect_image(path: Path, where: str) -> ImageInfo | Problem:
    """Read and fully decode ``path``; a :class:`Problem` naming ``where`` if that fails."""
    if not path.exists():
        return Problem("missing_image", f"{where}: missing image {path.name}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Problem("unreadable_image", f"{where}: unreadable image {path.name} ({exc})")
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            width, height = im.size
    except Exception as exc:  # PIL raises many types for broken files
        return Problem(
            "corrupt_image", f"{where}: corrupt image {path.name} ({type(exc).__name__}: {exc})"
        )
    ext = path.suffix.lower().lstrip(".") or "png"
    return ImageInfo(hashlib.sha256(data).hexdigest(), width, height, ext)


def place(src: Path, dest: Path, mode: str, *, warned: list[bool]) -> None:
    """Copy or hard-link ``src`` to ``dest`` (a hard link falls back to a copy across devices)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if mode == "hardlink":
        try:
            os.link(src, dest)
            return
        except OSError as exc:
            if not warned[0]:
                log.warning("import: cannot hard-link %s (%s); copying instead", src, exc)
                warned[0] = True
    shutil.copyfile(src, dest)


def reference_path(src: Path, table_dir: Path) -> str:
    """``src`` relative to the manifest's final directory (POSIX separators, symlinks kept)."""
    return Path(os.path.relpath(os.path.abspath(src), os.path.abspath(table_dir))).as_posix()
