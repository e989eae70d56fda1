"""One CPU's worth of threads per pytest-xdist worker.

numpy's OpenBLAS and torch's OpenMP pool each start one thread per core, and their idle threads
spin before they sleep. Two xdist workers on a 2-core machine thus run four spinning pools on two
cores: a test of tiny-checkpoint forward passes measured 49.5 s of CPU with two threads per
worker and 11.5 s with one (same test, same results, side by side under the same load).
:func:`limit_threads` gives each worker ``cores // workers`` threads (at least one): in the
libraries already loaded (threadpoolctl, ``torch.set_num_threads``), in those loaded later and
in the subprocesses a test starts (the ``*_NUM_THREADS`` variables, unless the user set them).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping

log = logging.getLogger(__name__)

#: the variables the BLAS and OpenMP runtimes read when they load
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def threads_per_worker(workers: int, cores: int) -> int:
    """The threads each of ``workers`` processes gets on ``cores`` cores (at least one)."""
    return max(1, cores // max(1, workers))


def worker_thread_settings(environ: MutableMapping[str, str], cores: int) -> int | None:
    """In an xdist worker's ``environ`` (``PYTEST_XDIST_WORKER_COUNT`` set): set each of
    :data:`THREAD_VARIABLES` the user did not set to :func:`threads_per_worker` and return the
    pool size to use (``OMP_NUM_THREADS``); outside a worker return None and change nothing."""
    workers = environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers:
        return None
    n = threads_per_worker(int(workers), cores)
    for var in THREAD_VARIABLES:
        environ.setdefault(var, str(n))
    return int(environ["OMP_NUM_THREADS"])  # a user's explicit choice wins


def limit_threads() -> int | None:
    """In an xdist worker, cap this process's thread pools (those loaded, those loaded later,
    those of its subprocesses) to :func:`worker_thread_settings`; return the cap, or None
    outside a worker."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    n = worker_thread_settings(os.environ, cores or 1)
    if n is None:
        return None
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)  # the pools already loaded (numpy's OpenBLAS via pandas)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    log.debug("%s threads per xdist worker (%s cores)", n, cores)
    return n
