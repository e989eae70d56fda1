"""Provenance of a report: the git commit and the data version (DVC hashes of the inputs).

The data version of a path is the ``md5`` DVC recorded for it in ``dvc.lock`` (a directory
output's hash ends in ``.dir``). A path that ``dvc.lock`` does not list (a run outside DVC) gets
an md5 computed here: of the file, or of the sorted ``relative path + file md5`` listing of a
directory -- stable for the same content, but not DVC's own ``.dir`` hash, so it is labelled
``computed``.
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DataVersion:
    """The hash of one data path and where it came from (``dvc.lock`` or ``computed``)."""

    path: str
    md5: str | None
    source: str  # "dvc.lock" | "computed" | "missing"

    @property
    def short(self) -> str:
        """First 10 hex digits (``.dir`` suffix dropped), or ``-`` when missing."""
        return self.md5.removesuffix(".dir")[:10] if self.md5 else "-"


def git_commit(root: Path) -> tuple[str | None, bool]:
    """``(HEAD sha, dirty)`` of the checkout at ``root``; ``(None, False)`` outside git.

    ``dirty`` ignores what the pipeline itself rewrites (``dvc.lock``, ``reports/``), so a
    report built by ``dvc repro`` on a clean checkout is not flagged by its own outputs.
    """
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":(exclude)dvc.lock",
                ":(exclude)reports",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None, False
    return sha or None, bool(status.strip())


def dvc_lock_hashes(root: Path) -> dict[str, str]:
    """``{out path: md5}`` of every stage output recorded in ``root/dvc.lock`` (empty if none)."""
    lock = root / "dvc.lock"
    if not lock.exists():
        return {}
    try:
        data = yaml.safe_load(lock.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        log.warning("%s: not valid YAML (%s); data versions are computed instead", lock, exc)
        return {}
    out: dict[str, str] = {}
    for stage in (data.get("stages") or {}).values():
        for o in stage.get("outs", []) or []:
            if isinstance(o, dict) and o.get("path") and o.get("md5"):
                out[str(o["path"]).rstrip("/")] = str(o["md5"])
    return out


def _md5_file(path: Path) -> str:
    h = hashlib.md5()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def compute_md5(path: Path) -> str | None:
    """md5 of a file, or of a directory's sorted ``relpath md5`` listing; None if it is absent."""
    if path.is_file():
        return _md5_file(path)
    if not path.is_dir():
        return None
    h = hashlib.md5()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(path).as_posix()} {_md5_file(f)}\n".encode())
    return h.hexdigest() + ".dir"


def data_version(root: Path, rel: str, lock: dict[str, str] | None = None) -> DataVersion:
    """The data version of ``root/rel``: from ``dvc.lock`` when listed there, else computed."""
    lock = dvc_lock_hashes(root) if lock is None else lock
    key = rel.rstrip("/")
    if key in lock:
        return DataVersion(key, lock[key], "dvc.lock")
    md5 = compute_md5(root / key)
    return DataVersion(key, md5, "computed" if md5 else "missing")


def combined_digest(versions: list[DataVersion]) -> str:
    """One 32-hex digest over several data versions (the MLflow dataset digest)."""
    h = hashlib.md5()
    for v in sorted(versions, key=lambda v: v.path):
        h.update(f"{v.path}={v.md5}\n".encode())
    return h.hexdigest()
