"""Pixel-level import checks (missing, unreadable, corrupt, too large, unsupported mode) and
placing images in data/.

Every read goes through :mod:`stylisticbias.dataset.regular_files`: a path that is not a regular
file (a FIFO, a device such as a symlink to ``/dev/zero``, a socket, a directory named ``.png``)
is an ``unreadable_image`` and a file over ``generator.max_image_bytes`` a ``too_large``
problem, both decided by ``stat`` before the file is opened; copying re-reads within the same
bound and checks the bytes against the sha256 just taken.

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
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from stylisticbias.dataset.imaging import conversion_note, to_rgb
from stylisticbias.dataset.importer.safety import clean_message
from stylisticbias.dataset.importer.sources import Problem
from stylisticbias.dataset.regular_files import (
    DEFAULT_MAX_IMAGE_BYTES,
    SpecialFile,
    TooLargeFile,
    check_regular,
    copy_regular,
    file_kind,
    read_regular,
)
from stylisticbias.errors import StylisticBiasError

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


def inspect_image(
    path: Path, where: str, max_bytes: int = DEFAULT_MAX_IMAGE_BYTES
) -> ImageInfo | Problem:
    """Read and fully decode ``path``; a :class:`Problem` naming ``where`` if that fails.

    A path that is not a regular file, or one over ``max_bytes``, is refused before it is
    opened (:mod:`stylisticbias.dataset.regular_files`).
    """
    if not path.exists():
        return Problem("missing_image", f"{where}: missing image {path.name}")
    try:
        data = read_regular(path, where, max_bytes)
    except SpecialFile as exc:
        via = " through a symlink" if path.is_symlink() else ""
        return Problem(
            "unreadable_image",
            f"{where}: unreadable image {path.name} ({exc.kind}{via}, not a regular file); "
            "refused, not opened",
        )
    except TooLargeFile as exc:
        return Problem(
            "too_large",
            f"{where}: image {path.name} is larger than generator.max_image_bytes "
            f"({exc.size:,} > {exc.limit:,} bytes); refused, not read -- downscale or "
            "recompress it, or raise the bound",
        )
    except (OSError, StylisticBiasError) as exc:
        return Problem(
            "unreadable_image", f"{where}: unreadable image {path.name} ({clean_message(str(exc))})"
        )
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


def converted_png(src: Path, where: str, max_bytes: int = DEFAULT_MAX_IMAGE_BYTES) -> bytes:
    """``src`` as an 8-bit RGB PNG by the stated rule (:mod:`stylisticbias.dataset.imaging`);
    read as a regular file of at most ``max_bytes`` (:func:`read_regular`)."""
    with Image.open(io.BytesIO(read_regular(src, where, max_bytes))) as im:
        im.load()
        rgb = to_rgb(im)
    buf = io.BytesIO()
    rgb.save(buf, format="PNG")
    return buf.getvalue()


def place(
    src: Path,
    dest: Path,
    mode: str,
    *,
    warned: list[bool],
    where: str,
    sha256: str,
    max_bytes: int = DEFAULT_MAX_IMAGE_BYTES,
) -> None:
    """Copy or hard-link ``src`` to ``dest`` (a hard link falls back to a copy across devices).

    ``src`` must still be a regular file of at most ``max_bytes`` (checked before it is linked
    or opened); a copy must have the ``sha256`` the image check took.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    if mode == "hardlink":
        check_regular(src, where, max_bytes)
        try:
            os.link(src, dest)
        except OSError as exc:
            if not warned[0]:
                log.warning("import: cannot hard-link %s (%s); copying instead", src, exc)
                warned[0] = True
        else:
            st = os.lstat(dest)
            if stat.S_ISREG(st.st_mode) and st.st_size <= max_bytes:
                return
            dest.unlink()
            raise StylisticBiasError(
                f"{where}: image {src.name} became {file_kind(st.st_mode)} of {st.st_size:,} "
                "bytes while being imported; refused -- re-run the import"
            )
    if copy_regular(src, dest, where, max_bytes) != sha256:
        dest.unlink()
        raise StylisticBiasError(
            f"{where}: image {src.name} changed while being imported (its sha256 differs from "
            "the check a moment ago); refused -- re-run the import"
        )


def reference_path(src: Path, table_dir: Path) -> str:
    """``src`` relative to the manifest's final directory (POSIX separators, symlinks kept)."""
    return Path(os.path.relpath(os.path.abspath(src), os.path.abspath(table_dir))).as_posix()
