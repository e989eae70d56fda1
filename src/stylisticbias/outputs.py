"""Safe stage outputs: one writer at a time, atomic files and directories.

Every stage goes through this module before it touches anything it writes (after
:mod:`stylisticbias.output_paths` has checked where it may write):

- :class:`OutputLock` refuses a second process on the same output (an ``fcntl`` lock in
  ``.locks/`` at the project root; released by the kernel when a process dies, so a killed run
  never leaves a stale lock);
- :func:`atomic_write_bytes` / :func:`atomic_write_json` / :func:`atomic_write_text` /
  :func:`atomic_write_parquet` write to a hidden temp sibling and ``os.replace`` it into place;
- :func:`atomic_dir` builds a whole output directory in a hidden temp sibling and swaps it in only
  when complete, so a failed or killed stage leaves the previous output intact, and a rerun
  removes only the leftovers it recognises as its own (``.<name>.tmp`` / ``.<name>.old``).

Temp names are fixed per output (no pid, no time), so a killed run's leftover is always found by
the next run and never mistaken for a finished file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- locking
_HELD: dict[int, Any] = {}


def _close_inherited_locks() -> None:
    """In a forked child (render workers, DataLoader workers, DDP ranks): drop the copies of the
    parent's lock descriptors, so the lock dies with the parent and not with its last child."""
    for fh in list(_HELD.values()):
        with contextlib.suppress(OSError):
            os.close(fh.fileno())
    _HELD.clear()


os.register_at_fork(after_in_child=_close_inherited_locks)


class OutputLock:
    """An exclusive, non-blocking lock on one output, held for a stage's lifetime.

    The lock file lives in ``<root>/.locks/`` (git-ignored, outside every DVC output) and is
    locked with ``fcntl.flock``; the kernel releases it when the process exits or is killed.
    Forked children close their inherited copy at once, so worker processes that outlive a
    killed parent do not keep the lock. A second process asking for the same output gets a
    :class:`StylisticBiasError`.
    """

    def __init__(self, root: Path, output: Path) -> None:
        out = Path(output)
        rel = str((out if out.is_absolute() else Path(root) / out).resolve())
        digest = hashlib.sha1(rel.encode()).hexdigest()[:12]
        self.output = Path(output)
        self.path = Path(root) / ".locks" / f"{Path(output).name}-{digest}.lock"
        self._fh: Any = None

    def __enter__(self) -> OutputLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            fh.close()
            raise StylisticBiasError(
                f"{self.output}: another process (pid {holder}) is writing this output "
                f"(lock {self.path}); wait for it to finish or stop it"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh
        _HELD[id(self)] = fh
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            _HELD.pop(id(self), None)
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None


# --------------------------------------------------------------------------- atomic files
def temp_sibling(path: Path) -> Path:
    """The fixed hidden temp name of ``path`` (``.<name>.tmp`` beside it)."""
    return path.with_name(f".{path.name}.tmp")


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield ``path``'s temp sibling to write; ``os.replace`` it onto ``path`` when the block ends.

    For writers that need a file name (streamed Parquet, ``DataFrame.to_csv``). On an exception
    the temp file is left for :func:`remove_temp_files` and ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_sibling(path)
    yield tmp
    os.replace(tmp, path)


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``path`` via its temp sibling + fsync + ``os.replace`` (never half-written).

    ``durable=False`` skips the fsync (many small cache entries that a crash may lose but never
    leaves half-written: the rename is still atomic).
    """
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())


def atomic_link(src: Path, dest: Path) -> None:
    """Place ``src`` at ``dest`` (hard link, else copy) via ``dest``'s temp sibling, atomically."""
    with atomic_path(dest) as tmp:
        if tmp.exists():
            tmp.unlink()
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
    # rename() of two links to one file does nothing (POSIX): ``dest`` already was ``src``
    temp_sibling(Path(dest)).unlink(missing_ok=True)


def atomic_write_text(path: Path, text: str) -> None:
    """UTF-8 text, atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    """JSON (sorted keys, indented, trailing newline), atomically."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def atomic_write_parquet(df: Any, path: Path) -> Path:
    """A DataFrame as Parquet, atomically.

    Parquet footers carry the writer's pyarrow and pandas versions; both are pinned by
    ``requirements.lock``, which is what keeps these files byte-identical across machines.
    """
    path = Path(path)
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
    return path


def round_floats(obj: Any, digits: int = 12) -> Any:
    """``obj`` with every float rounded to ``digits`` significant digits (nested dicts/lists).

    For committed JSON metrics: the last bits of a float sum depend on memory alignment and
    thread count (numpy's pairwise/SIMD summation), which would make ``reports/metrics.json``
    differ between two runs of the same data; 12 digits are far below any reported precision.
    """
    if isinstance(obj, float):
        return float(f"{obj:.{digits}g}") if math.isfinite(obj) else obj
    if isinstance(obj, dict):
        return {k: round_floats(v, digits) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [round_floats(v, digits) for v in obj]
    return obj


def remove_temp_files(directory: Path) -> int:
    """Delete leftover temp files (``.*.tmp``) of killed runs under ``directory``; their count."""
    n = 0
    if not Path(directory).is_dir():
        return 0
    for p in Path(directory).rglob(".*.tmp"):
        if p.is_file():
            p.unlink(missing_ok=True)
            n += 1
    return n


# --------------------------------------------------------------------------- atomic directories
def _old_sibling(final: Path) -> Path:
    return final.with_name(f".{final.name}.old")


def recover_dir(final: Path) -> None:
    """Undo what a run killed during :func:`atomic_dir` left behind.

    Killed between the two renames of a swap (``final`` moved aside, the new one not yet in
    place): the previous output is moved back. A leftover half-built temp directory or an old
    copy whose replacement is in place is removed (both names are this module's own).
    """
    final = Path(final)
    old, tmp = _old_sibling(final), temp_sibling(final)
    if old.exists() and not final.exists():
        log.warning("%s: restoring the previous output after an interrupted swap", final)
        os.replace(old, final)
    if old.exists():
        shutil.rmtree(old)
    if tmp.exists():
        log.info("%s: removing an unfinished build from an interrupted run", tmp)
        shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()


@contextlib.contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Build ``final`` in its hidden temp sibling; swap it in when the block ends without error.

    On an exception (or a kill) the previous ``final`` is untouched and the temp sibling is
    left for :func:`recover_dir` (called at the start of the next run) to remove.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    recover_dir(final)
    tmp = temp_sibling(final)
    tmp.mkdir()
    yield tmp
    old = _old_sibling(final)
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    if old.exists():
        shutil.rmtree(old)
