"""Rendering machinery of the dataset stages: generator set-up and (multi-process) execution.

Each worker process builds its own generator from the config (Hydra ``_target_``) and stores
every finished request in the shared :class:`RenderCache` right away.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from PIL import Image
from tqdm import tqdm

from stylisticbias.dataset.render_cache import CacheRecord, RenderCache
from stylisticbias.errors import StylisticBiasError
from stylisticbias.generators.base import EditSpec, FaceSpec, Generator, GenResult

#: keys of a generator config that configure the builder, not the backend's constructor
BUILDER_KEYS = ("workers",)


# --------------------------------------------------------------------------- generator set-up
def generator_section(generator: Any) -> dict[str, Any]:
    """The ``generator`` section as composed: its spec (``Config.generator``) as a mapping, or a
    plug-in generator's mapping as given.

    The section stays a mapping below this point: the generator class receives it as keyword
    arguments (Hydra ``_target_``) and every render-cache key hashes it. Each shipped
    generator's spec round-trips its section exactly (``tests/dataset/test_rendering.py``), so
    the keys of finished images do not change.
    """
    if is_dataclass(generator) and not isinstance(generator, type):
        return asdict(generator)
    if isinstance(generator, Mapping):
        return dict(generator)
    raise StylisticBiasError(
        f"params.yaml: generator is {type(generator).__name__}, not a section (conf/generator/)"
    )


def generator_workers(generator: Any) -> int:
    """The builder processes the ``generator`` section asks for (``workers``, at least 1): a
    builder key, so :func:`generator_config` leaves it out."""
    return int(generator_section(generator).get("workers", 1) or 1)


def generator_config(generator: Any) -> dict[str, Any]:
    """The ``generator`` section (see :func:`generator_section`) with builder-only keys removed
    (what ``_target_`` receives)."""
    cfg = generator_section(generator)
    if "_target_" not in cfg:
        raise StylisticBiasError(
            "params.yaml: generator._target_ is missing (conf/generator/*.yaml)"
        )
    return {k: v for k, v in cfg.items() if k not in BUILDER_KEYS}


def generator_code_version(cfg: dict[str, Any]) -> str:
    """SHA-256 of the source of the generator's module (its package, if it is one).

    Part of every render-cache key, so changing the drawing code re-renders instead of reusing
    stale images.
    """
    import hashlib
    import importlib.util

    module = str(cfg["_target_"]).rsplit(".", 1)[0]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        raise StylisticBiasError(f"generator._target_: module {module!r} not found")
    origin = Path(spec.origin)
    files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


def make_generator(cfg: dict[str, Any]) -> Generator:
    """Instantiate a generator from its config (Hydra ``_target_``)."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    cfg = {k: v for k, v in cfg.items() if k != "_code_version"}  # cache-key only
    try:
        gen = instantiate(cfg, _convert_="all")
    except InstantiationException as exc:
        cause = exc.__cause__
        if isinstance(cause, StylisticBiasError):
            raise cause from None
        msg = str(cause or exc).strip().splitlines()[0]
        raise StylisticBiasError(f"generator {cfg.get('_target_')}: {msg}") from None
    if not isinstance(gen, Generator):
        raise StylisticBiasError(f"generator {cfg['_target_']} is not a stylisticbias Generator")
    return gen


# --------------------------------------------------------------------------- worker side
_WORKER: dict[str, Any] = {}


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no-op elsewhere).

    A render worker whose stage was killed must not go on writing into the render cache while
    the rerun renders the same keys.
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before prctl took effect
            os._exit(1)
    except (OSError, AttributeError):
        pass


def _init_worker(gen_cfg: dict[str, Any], cache_root: str) -> None:
    die_with_parent()
    _WORKER["gen"] = make_generator(gen_cfg)
    _WORKER["cache"] = RenderCache(Path(cache_root))


def _worker_state(gen_cfg: dict[str, Any], cache_root: Path) -> tuple[Generator, RenderCache]:
    if "gen" not in _WORKER:
        _init_worker(gen_cfg, str(cache_root))
    return _WORKER["gen"], _WORKER["cache"]


def _store(
    cache: RenderCache, keys: Sequence[str], results: Sequence[GenResult], ext: str
) -> list[CacheRecord]:
    if len(results) != len(keys):
        raise RuntimeError(f"generator returned {len(results)} results for {len(keys)} requests")
    return [cache.put(k, r.image, r.status, r.reason, ext) for k, r in zip(keys, results)]


def run_faces(task: tuple[list[str], list[FaceSpec]]) -> list[CacheRecord]:
    """Worker task: render a batch of base faces and store them under their cache keys."""
    keys, specs = task
    gen, cache = _WORKER["gen"], _WORKER["cache"]
    return _store(cache, keys, gen.generate_faces(specs), gen.file_format)


def run_edits(task: tuple[str, list[str], list[EditSpec]]) -> list[CacheRecord]:
    """Worker task: apply a batch of edits of one base face (read from its path) and store them."""
    base_path, keys, edits = task
    gen, cache = _WORKER["gen"], _WORKER["cache"]
    with Image.open(base_path) as im:
        base = im.convert("RGB")
    return _store(cache, keys, gen.edit(base, edits), gen.file_format)


def execute(
    tasks: list[Any],
    fn: Any,
    gen_cfg: dict[str, Any],
    cache_root: Path,
    workers: int,
    desc: str,
    total: int,
) -> Iterator[list[CacheRecord]]:
    """Run tasks in ``workers`` processes (or in-process for 1), yielding results as they finish."""
    bar = tqdm(total=total, desc=desc, unit="img", leave=True)
    try:
        if workers <= 1 or len(tasks) <= 1:
            _worker_state(gen_cfg, cache_root)
            try:
                for t in tasks:
                    recs = fn(t)
                    bar.update(len(recs))
                    yield recs
            finally:
                _WORKER.clear()
        else:
            with ProcessPoolExecutor(
                max_workers=workers, initializer=_init_worker, initargs=(gen_cfg, str(cache_root))
            ) as pool:
                for recs in pool.map(fn, tasks, chunksize=1):
                    bar.update(len(recs))
                    yield recs
    finally:
        bar.close()
