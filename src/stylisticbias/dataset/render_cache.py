"""A content-addressed cache of rendered images that makes generation resumable.

Every request (base face or edit) has a key: the SHA-256 of the generator configuration, the
prompt, the seed and the spec. A finished request is stored as ``<key>.<ext>`` plus a small
``<key>.json`` record (status, reason, sha256, size), both written atomically (temp file +
rename), so a run killed at any point leaves only complete entries. Stage outputs are hard
links into the cache, so a restarted run re-links what is done and renders only the rest.
Refusals and blocks are cached as records without an image and retried only on request.

Entries are verified: an ``ok`` record holds the sha256 of its image, and :meth:`RenderCache.get`
checks the image's bytes against it (once per file version and process). A bad entry (bytes
changed on disk, a truncated copy, an unreadable record) is set aside as
``<key>.<ext>.corrupt`` -- kept for inspection, never linked -- and reported as missing, so the
stage renders it again instead of linking it into an output whose manifest would contradict it.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from stylisticbias.dataset.regular_files import sha256_regular
from stylisticbias.outputs import atomic_link, atomic_write_bytes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheRecord:
    """The outcome of one request, as stored next to its image."""

    key: str
    status: str
    reason: str | None
    sha256: str | None
    width: int | None
    height: int | None
    ext: str


def request_key(payload: dict[str, Any]) -> str:
    """Stable key of a request (canonical JSON, SHA-256)."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def sha256_file(path: Path, where: str | None = None) -> str:
    """SHA-256 of a regular file's bytes, streamed.

    Anything else (a FIFO, a device, a socket, a directory: an image referenced in place may be
    one) is refused before it is opened, in one line naming ``where`` (default: the path):
    :func:`stylisticbias.dataset.regular_files.sha256_regular`.
    """
    return sha256_regular(path, str(path) if where is None else where)


def encode_image(image: Image.Image, ext: str) -> bytes:
    """Encode an image the way the dataset stores it (PNG, or quality-95 JPEG/WebP)."""
    buf = io.BytesIO()
    if ext == "png":
        image.save(buf, format="PNG", compress_level=1)
    elif ext in ("jpg", "jpeg"):
        image.convert("RGB").save(buf, format="JPEG", quality=95)
    elif ext == "webp":
        image.save(buf, format="WEBP", quality=95)
    else:
        raise ValueError(f"unsupported image format {ext!r}; valid: png, jpg, webp")
    return buf.getvalue()


def _atomic_write(path: Path, data: bytes) -> None:
    # A fixed temp name per entry (outputs.temp_sibling, no pid): a render killed mid-write
    # leaves at most this file, and the next run, which must render the same unfinished key,
    # overwrites and renames it -- no orphan survives. Distinct keys never share a temp name; one
    # key is rendered by one process at a time (each stage holds the lock of its output).
    atomic_write_bytes(path, data, durable=False)


class RenderCache:
    """Directory of finished requests, safe to share between worker processes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        #: image files whose bytes matched their record: (key, inode, size, mtime_ns)
        self._verified: set[tuple[str, int, int, int]] = set()

    def _shard(self, key: str) -> Path:
        d = self.root / key[:2]
        d.mkdir(parents=True, exist_ok=True)
        return d

    def get(self, key: str) -> CacheRecord | None:
        """The finished, verified record for ``key``, or None: also when its image went
        missing, or when the entry is bad (its image set aside, see the module docstring)."""
        meta = self.root / key[:2] / f"{key}.json"
        if not meta.exists():
            return None
        try:
            rec = CacheRecord(**json.loads(meta.read_text()))
        except (ValueError, TypeError, OSError):
            log.warning("render cache: unreadable record %s; the request is made again", meta)
            return None
        if rec.status != "ok":
            return rec
        image = self.image_path(rec)
        try:
            st = image.stat()
        except OSError:
            return None
        stamp = (key, st.st_ino, st.st_size, st.st_mtime_ns)
        if stamp in self._verified:
            return rec
        if (
            rec.sha256 is None
            or not stat.S_ISREG(st.st_mode)  # a FIFO or device is never opened: set aside
            or sha256_file(image) != rec.sha256
        ):
            self._set_aside(rec, meta)
            return None
        self._verified.add(stamp)
        return rec

    def _set_aside(self, rec: CacheRecord, meta: Path) -> None:
        """A bad entry: its image becomes ``<image>.corrupt`` (kept), its record is removed."""
        image = self.image_path(rec)
        aside = image.with_name(image.name + ".corrupt")
        os.replace(image, aside)
        meta.unlink(missing_ok=True)
        log.warning(
            "render cache: %s does not match the sha256 of its record (%s); set aside as %s "
            "and rendered again",
            image,
            rec.sha256,
            aside.name,
        )

    def image_path(self, rec: CacheRecord) -> Path:
        """Where the image of a finished ``ok`` record lies."""
        return self.root / rec.key[:2] / f"{rec.key}.{rec.ext}"

    def put(
        self, key: str, image: Image.Image | None, status: str, reason: str | None, ext: str
    ) -> CacheRecord:
        """Store one outcome: the image first, then its record (the record marks completion)."""
        shard = self._shard(key)
        sha = width = height = None
        if status == "ok" and image is not None:
            data = encode_image(image, ext)
            _atomic_write(shard / f"{key}.{ext}", data)
            sha = hashlib.sha256(data).hexdigest()
            width, height = image.size
        rec = CacheRecord(key, status, reason, sha, width, height, ext)
        _atomic_write(shard / f"{key}.json", json.dumps(asdict(rec)).encode())
        return rec

    def materialize(self, rec: CacheRecord, dest: Path) -> None:
        """Place the cached image at ``dest`` (hard link, else copy), replacing what is there."""
        atomic_link(self.image_path(rec), dest)
