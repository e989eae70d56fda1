"""Where the streaming analysis summarises its models: worker processes, or threads.

One model's summary (:func:`~stylisticbias.analysis.per_model.summarize_model`) is mostly pandas
and SciPy work that holds the GIL, so threads overlap little of it; ``workers >= 2`` therefore
runs the summaries in that many *forked* worker processes (each holds one model at a time, so
memory is bounded by ``workers`` models plus the parent's small summaries), and the parent
receives each finished summary (a few MB, pickled). The function a worker runs is inherited
through the fork rather than pickled, so closures over the analysis inputs are fine. Where
``fork`` is not available, or with one worker, a thread does the work as before. The numbers do
not depend on where a summary was computed.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)

#: the function forked workers run (set in the parent just before the workers are forked)
_TASK: dict[str, Callable[[str], Any]] = {}


def _run(name: str) -> Any:
    return _TASK["fn"](name)


def _ready() -> None:
    """A no-op: its round trip forks every worker at once, before the caller starts threads."""


def processes_available() -> bool:
    """Whether worker processes can inherit the task by ``fork`` (Linux, macOS)."""
    return "fork" in mp.get_all_start_methods()


@contextmanager
def summary_pool(fn: Callable[[str], Any], workers: int) -> Iterator[Callable[[str], Future]]:
    """A ``submit(name) -> Future`` that runs ``fn(name)`` in ``workers`` forked processes
    (``workers >= 2`` and fork available) or in a thread (otherwise)."""
    if workers < 2 or not processes_available():
        with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:
            yield lambda name: pool.submit(fn, name)
        return
    if "fn" in _TASK:
        raise RuntimeError("summary_pool: already in use in this process")
    _TASK["fn"] = fn
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as pool:
            pool.submit(_ready).result()  # fork now, while this process runs no other threads
            yield lambda name: pool.submit(_run, name)
    finally:
        _TASK.pop("fn", None)
