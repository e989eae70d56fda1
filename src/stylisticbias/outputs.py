"""Safe stage outputs: where a stage may write, one writer at a time, atomic files and directories.

Every stage goes through this module before it touches anything it writes:

- :func:`stage_output` refuses an output path that is not strictly inside the data root
  (``paths.data``), or overlaps another stage's output or the render cache (``paths.faces=data``
  would otherwise hold -- and replace -- the judgments and the render cache); the data root
  itself may be neither the project, its sources, nor a system-wide directory;
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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)

#: project paths no stage output may be, contain or sit inside
PROTECTED = ("conf", "src", "pipelines", "tests", "docs", ".git", ".dvc", ".locks")
#: ``params['paths']`` keys that are stage outputs (``data`` is their common parent, not one)
OUTPUT_KEYS = ("faces", "variations", "judgments", "scores", "qa", "annotations", "soda")


# --------------------------------------------------------------------------- paths
def _resolve(root: Path, raw: str | os.PathLike[str], key: str) -> Path:
    text = str(raw).strip()
    if not text:
        raise StylisticBiasError(f"{key}: empty path")
    p = Path(text).expanduser()
    return (p if p.is_absolute() else Path(root) / p).resolve()


def data_root(root: Path, raw: str | os.PathLike[str], key: str = "paths.data") -> Path:
    """The resolved data root: inside the project (not the project itself, not its sources),
    or a dedicated directory elsewhere (e.g. ``/scratch/me/stylisticbias``) that is neither a
    top-level directory, the home directory, nor an ancestor of the project."""
    rootr = Path(root).resolve()
    d = _resolve(rootr, raw, key)
    if d == rootr or rootr.is_relative_to(d):
        raise StylisticBiasError(
            f"{key}={str(raw)!r}: resolves to {d}, which holds the whole project; "
            "use a directory of its own such as data"
        )
    if d.is_relative_to(rootr):
        for name in PROTECTED:
            prot = rootr / name
            if d == prot or d.is_relative_to(prot):
                raise StylisticBiasError(
                    f"{key}={str(raw)!r}: lies in the project's {name}/ directory; use data"
                )
        return d
    home = Path.home().resolve()
    if len(d.parts) < 3 or d == home or home.is_relative_to(d):
        raise StylisticBiasError(
            f"{key}={str(raw)!r}: {d} is a system-wide directory; give a dedicated "
            "directory (e.g. /scratch/<you>/stylisticbias) or keep the default data"
        )
    return d


def check_output_path(
    root: Path,
    raw: str | os.PathLike[str],
    key: str,
    data: Path,
    others: Mapping[str, str | os.PathLike[str]],
) -> Path:
    """The resolved output path of ``key``, refused when writing it could destroy other data.

    The output must lie strictly inside the data root ``data`` (so ``paths.faces=data`` or an
    absolute directory elsewhere is refused) and may neither be, hold nor sit inside any of
    ``others`` (the other stages' outputs, the render cache, the judge stash).
    """
    rootr = Path(root).resolve()
    out = _resolve(rootr, raw, key)
    if out == data or not out.is_relative_to(data):
        raise StylisticBiasError(
            f"{key}={str(raw)!r}: resolves to {out}, which is "
            + ("the data root itself" if out == data else "outside the data root")
            + f" {data}; stage outputs must lie inside it (e.g. {data.name}/faces)"
        )
    for other_key, other_raw in others.items():
        if other_key == key or other_raw is None:
            continue
        other = _resolve(rootr, other_raw, other_key)
        if out == other or out.is_relative_to(other) or other.is_relative_to(out):
            raise StylisticBiasError(
                f"{key}={str(raw)!r}: overlaps {other_key}={str(other_raw)!r} "
                f"({other}); each stage needs an output of its own"
            )
    return out


def declared_outputs(params: Mapping[str, Any]) -> dict[str, str]:
    """``{'paths.faces': 'data/faces', ...}`` plus the render cache, from composed params."""
    paths = dict(params.get("paths") or {})
    out = {f"paths.{k}": str(paths[k]) for k in OUTPUT_KEYS if paths.get(k) is not None}
    data = paths.get("data")
    if data is not None:
        out["render cache"] = str(Path(str(data)) / ".render-cache")
    return out


def stage_output(params: Mapping[str, Any], key: str, root: Path) -> Path:
    """Resolve and check ``paths.<key>`` of ``params`` against every other declared output."""
    paths = dict(params.get("paths") or {})
    for k in ("data", key):
        if paths.get(k) is None:
            raise StylisticBiasError(f"paths.{k}: missing; valid keys: {', '.join(sorted(paths))}")
    data = data_root(root, paths["data"])
    return check_output_path(root, paths[key], f"paths.{key}", data, declared_outputs(params))


def check_all_outputs(params: Mapping[str, Any], root: Path) -> None:
    """Check every stage output path of ``params`` (at compose time and by each stage)."""
    for key in OUTPUT_KEYS:
        if (params.get("paths") or {}).get(key) is not None:
            stage_output(params, key, root)


def safe_member(
    base: Path, rel: str | os.PathLike[str], what: str, root: Path | None = None
) -> Path:
    """``base / rel`` for a path read from a manifest, refused unless it stays inside ``root``.

    ``rel`` is relative to the manifest's directory ``base``; ``root`` is the data root (default:
    ``base`` itself). An absolute path, one that climbs out of ``root`` with ``..``, or a symlink
    that points outside it raises :class:`StylisticBiasError` naming ``what`` (e.g.
    ``faces.parquet row 3``); such a path is never opened. (Imported images referenced in place
    live under ``data/import/`` and are reached as ``../import/...``: inside the data root.)
    """
    text = str(rel)
    p = Path(text)
    limit = Path(root if root is not None else base).resolve()
    if not text or p.is_absolute():
        raise StylisticBiasError(
            f"{what}: image path {text!r} is absolute or empty; manifest paths must be relative "
            f"to the manifest's directory"
        )
    full = (Path(base).resolve() / p).resolve()
    if not full.is_relative_to(limit):
        raise StylisticBiasError(
            f"{what}: image path {text!r} leaves the data root {limit} (resolves to {full}); "
            "refused, not read"
        )
    return full


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
