"""Read an image set's files only when they are regular files of a bounded size.

An image set we did not write (``generator: import``, or its images referenced in place) may
hold anything under an image's name: a FIFO (``open`` blocks for ever), a symlink to
``/dev/zero`` (an endless read), a device, a socket, a directory, or a file of many gigabytes.
Every read of such a file goes through this module:

1. :func:`check_regular` ``os.stat``\\ s the path (following symlinks: a link to a regular
   file is read as that file; where links may lead is the path rule's business,
   :mod:`stylisticbias.dataset.importer.safety`) and refuses anything that is not a regular file
   (:class:`SpecialFile`) or, given a bound, is larger than it (:class:`TooLargeFile`) --
   *before* the file is opened;
2. :func:`open_regular` then opens it non-blocking (so a file swapped for a FIFO in between
   cannot block the ``open``), checks with ``fstat`` that the descriptor is the regular file
   just checked, and hands back a blocking binary reader;
3. :func:`read_regular` / :func:`copy_regular` / :func:`sha256_regular` read at most the bound
   (plus one byte, to notice a file that grew since its ``stat``).

Both errors are :class:`~stylisticbias.errors.StylisticBiasError`\\ s with one line naming the
file (``where``); the import turns them into a row's problem (``unreadable_image``,
``too_large``).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from stylisticbias.errors import StylisticBiasError

#: The default bound on one imported image file (``generator.max_image_bytes``).
DEFAULT_MAX_IMAGE_BYTES = 64 * 1024 * 1024

_CHUNK = 1 << 20
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class SpecialFile(StylisticBiasError):
    """A path that is not a regular file (``kind`` says what it is); never opened."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class TooLargeFile(StylisticBiasError):
    """A regular file over the size bound (``size`` bytes, ``limit`` bytes); never read."""

    def __init__(self, message: str, size: int, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words (``a FIFO (named pipe)``, ``a regular file``...)."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _label(path: Path | str) -> str:
    return Path(path).name or str(path)


def _special(path: Path | str, where: str, mode: int) -> SpecialFile:
    kind = file_kind(mode)
    via = " (through a symlink)" if os.path.islink(path) else ""
    return SpecialFile(
        f"{where}: {_label(path)} is {kind}{via}, not a regular file; refused, not opened", kind
    )


def _too_large(
    path: Path | str, where: str, size: int, limit: int, *, grew: bool = False
) -> TooLargeFile:
    what = "grew past" if grew else f"is {size:,} bytes, over"
    return TooLargeFile(
        f"{where}: {_label(path)} {what} the bound of {limit:,} bytes; refused, not read",
        size,
        limit,
    )


def check_regular(path: Path | str, where: str, max_bytes: int | None = None) -> os.stat_result:
    """``os.stat(path)`` (symlinks followed) if it is a regular file within ``max_bytes``.

    Raises :class:`SpecialFile` / :class:`TooLargeFile` (never opening the file), or the
    ``OSError`` of ``stat`` (``FileNotFoundError`` for a missing file or a dangling link).
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _special(path, where, st.st_mode)
    if max_bytes is not None and st.st_size > max_bytes:
        raise _too_large(path, where, st.st_size, max_bytes)
    return st


@contextmanager
def open_regular(path: Path | str, where: str, max_bytes: int | None = None) -> Iterator[BinaryIO]:
    """A binary reader of ``path`` once :func:`check_regular` accepted it (see the module)."""
    st = check_regular(path, where, max_bytes)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode):
            raise _special(path, where, now.st_mode)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise StylisticBiasError(
                f"{where}: {_label(path)} was replaced while being opened; refused, not read"
            )
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def _chunks(fh: BinaryIO, path: Path | str, where: str, max_bytes: int | None) -> Iterator[bytes]:
    total = 0
    while chunk := fh.read(_CHUNK):
        total += len(chunk)
        if max_bytes is not None and total > max_bytes:
            raise _too_large(path, where, total, max_bytes, grew=True)
        yield chunk


def read_regular(path: Path | str, where: str, max_bytes: int) -> bytes:
    """The bytes of ``path``: a regular file of at most ``max_bytes`` (checked before opening)."""
    with open_regular(path, where, max_bytes) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(path, where, len(data), max_bytes, grew=True)
    return data


def sha256_regular(path: Path | str, where: str, max_bytes: int | None = None) -> str:
    """SHA-256 of a regular file's bytes, streamed (bounded by ``max_bytes`` if given)."""
    h = hashlib.sha256()
    with open_regular(path, where, max_bytes) as fh:
        for chunk in _chunks(fh, path, where, max_bytes):
            h.update(chunk)
    return h.hexdigest()


def copy_regular(src: Path | str, dest: Path | str, where: str, max_bytes: int) -> str:
    """Copy the regular file ``src`` (at most ``max_bytes``) to ``dest``; its bytes' SHA-256.

    ``dest`` is written only after ``src`` passed :func:`check_regular`; a copy cut short by a
    file that grew past the bound is removed.
    """
    h = hashlib.sha256()
    with open_regular(src, where, max_bytes) as fh:
        try:
            with open(dest, "wb") as out:
                for chunk in _chunks(fh, src, where, max_bytes):
                    h.update(chunk)
                    out.write(chunk)
        except BaseException:
            Path(dest).unlink(missing_ok=True)
            raise
    return h.hexdigest()
