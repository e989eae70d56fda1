"""Work spread over forked worker processes (or a thread): model summaries, per-face image work.

Most of the per-item work here (one model's summary, one face's edits) is pandas, NumPy or
Python that holds the GIL, so threads overlap little of it; ``workers >= 2`` therefore runs the
items in that many *forked* worker processes, and the parent receives each finished result
(pickled). The function a worker runs is inherited through the fork rather than pickled, so
closures over the caller's inputs (tables, a generator holding its scenes) are fine. Where
``fork`` is not available, or with one worker, a thread does the work. Results never depend on
where an item was computed; :func:`ordered_map` returns them in the items' order.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

#: the function forked workers run (set in the parent just before the workers are forked)
_TASK: dict[str, Callable[[Any], Any]] = {}


def _run(item: Any) -> Any:
    return _TASK["fn"](item)


def _ready() -> None:
    """A no-op: its round trip forks every worker at once, before the caller starts threads."""


def processes_available() -> bool:
    """Whether worker processes can inherit the task by ``fork`` (Linux, macOS)."""
    return "fork" in mp.get_all_start_methods()


@contextmanager
def forked_pool(fn: Callable[[K], R], workers: int) -> Iterator[Callable[[K], Future[R]]]:
    """A ``submit(item) -> Future`` that runs ``fn(item)`` in ``workers`` forked processes
    (``workers >= 2`` and fork available) or in a thread (otherwise)."""
    if workers < 2 or not processes_available():
        with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:
            yield lambda item: pool.submit(fn, item)
        return
    if "fn" in _TASK:
        raise RuntimeError("forked_pool: already in use in this process")
    _TASK["fn"] = fn
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as pool:
            pool.submit(_ready).result()  # fork now, while this process runs no other threads
            yield lambda item: pool.submit(_run, item)
    finally:
        _TASK.pop("fn", None)


def ordered_map(fn: Callable[[K], R], items: Iterable[K], workers: int) -> Iterator[R]:
    """``fn(item)`` for each item, in the items' order, computed by :func:`forked_pool`
    (in this thread when ``workers < 2``: no pool, no pickling)."""
    items = list(items)
    if workers < 2 or len(items) < 2:
        yield from (fn(i) for i in items)
        return
    with forked_pool(fn, workers) as submit:
        futures = [submit(i) for i in items]
        for f in futures:
            yield f.result()
