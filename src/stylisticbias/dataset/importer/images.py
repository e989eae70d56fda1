"""Pixel-level import checks (missing, unreadable, corrupt, too large, unsupported mode) and
placing images in data/.

An image whose mode needs more than an exact conversion to RGB (16-bit grayscale, an alpha
channel: :mod:`stylisticbias.dataset.imaging` states the rule) is stored *converted* when copied
or hard-linked (an 8-bit RGB PNG, the bytes the manifest's sha256 is of), so every later stage
sees the same pixels; referenced in place it is converted by the same rule when the judge reads
it. Either way the import warns, naming the images. A 32-bit float image is refused.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from stylisticbias.dataset.imaging import conversion_note, to_rgb
from stylisticbias.dataset.importer.safety import clean_message
from stylisticbias.dataset.importer.sources import Problem

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageInfo:
    """What the judge will see: the bytes' sha256 and the decoded size; ``note`` says how the
    image is converted to RGB when that is more than exact (None otherwise)."""

    sha256: str
    width: int
    height: int
    ext: str
    note: str | None = None


def inspect_image(path: Path, where: str) -> ImageInfo | Problem:
    """Read and fully decode ``path``; a :class:`Problem` naming ``where`` if that fails."""
    if not path.exists():
        return Problem("missing_image", f"{where}: missing image {path.name}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Problem("unreadable_image", f"{where}: unreadable image {path.name} ({exc})")
    limit = Image.MAX_IMAGE_PIXELS
    try:
        with warnings.catch_warnings():
            # Pillow's decompression-bomb guard: our one line instead of its raw warning
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                width, height = im.size
                note = conversion_note(im)
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        return Problem(
            "too_large",
            f"{where}: image {path.name} has more than {limit or 0:,} pixels (Pillow's "
            "decompression-bomb limit); refused, not decoded -- downscale it",
        )
    except Exception as exc:  # PIL raises many types for broken files
        why = (
            "not an image format Pillow can decode"
            if isinstance(exc, Image.UnidentifiedImageError)
            else clean_message(f"{type(exc).__name__}: {exc}")
        )
        return Problem("corrupt_image", f"{where}: corrupt image {path.name} ({why})")
    if note is not None and note.endswith("refused"):
        return Problem(
            "unsupported_mode",
            f"{where}: image {path.name} is {note}; save it as 8- or 16-bit",
        )
    ext = path.suffix.lower().lstrip(".") or "png"
    return ImageInfo(hashlib.sha256(data).hexdigest(), width, height, ext, note)


def converted_png(src: Path) -> bytes:
    """``src`` as an 8-bit RGB PNG by the stated rule (:mod:`stylisticbias.dataset.imaging`)."""
    with Image.open(src) as im:
        im.load()
        rgb = to_rgb(im)
    buf = io.BytesIO()
    rgb.save(buf, format="PNG")
    return buf.getvalue()


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
