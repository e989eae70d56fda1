"""A content-addressed cache of rendered images that makes generation resumable.

Every request (base face or edit) has a key: the SHA-256 of the generator configuration, the
prompt, the seed and the spec. A finished request is stored as ``<key>.<ext>`` plus a small
``<key>.json`` record (status, reason, sha256, size), both written atomically (temp file +
rename), so a run killed at any point leaves only complete entries. Stage outputs are hard
links into the cache, so a restarted run re-links what is done and renders only the rest.
Refusals and blocks are cached as records without an image and retried only on request.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from stylisticbias.outputs import atomic_link, atomic_write_bytes


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


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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

    def _shard(self, key: str) -> Path:
        d = self.root / key[:2]
        d.mkdir(parents=True, exist_ok=True)
        return d

    def get(self, key: str) -> CacheRecord | None:
        """The finished record for ``key``, or None (also when its image went missing)."""
        meta = self.root / key[:2] / f"{key}.json"
        if not meta.exists():
            return None
        try:
            rec = CacheRecord(**json.loads(meta.read_text()))
        except (ValueError, TypeError):
            return None
        if rec.status == "ok" and not self.image_path(rec).exists():
            return None
        return rec

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
