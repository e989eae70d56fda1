"""A total wall-clock deadline for one blocking call (a tracking request and its retries).

``requests``' ``timeout`` bounds each socket *read*, not the call: a server that trickles one
byte every 2 s never trips a 5 s read timeout and holds the caller forever. :func:`call_deadline`
bounds the whole block with ``SIGALRM`` (``signal.setitimer``), which interrupts a blocking
``recv``: when the time is up, :class:`DeadlineExceeded` is raised in the main thread. It derives
from ``BaseException`` on purpose -- ``socket.timeout`` *is* ``TimeoutError``, which urllib3 and
MLflow catch and retry, so a ``TimeoutError`` would be swallowed and the call would go on.

Nested deadlines keep the earliest; an outer timer is re-armed with what is left of it. Outside
the main thread (or where ``SIGALRM`` does not exist) the block runs without a deadline: the
stage scripts make their tracking calls from the main thread.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator


class DeadlineExceeded(BaseException):
    """The block ran past its total deadline (raised from the ``SIGALRM`` handler)."""

    def __init__(self, seconds: float, what: str) -> None:
        super().__init__(f"{what} did not finish within {seconds:g} s (total deadline)")
        self.seconds = seconds
        self.what = what


def _usable() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def call_deadline(seconds: float, what: str = "the call") -> Iterator[None]:
    """Raise :class:`DeadlineExceeded` if the block runs longer than ``seconds`` in total."""
    if not _usable() or seconds <= 0:
        yield
        return
    start = time.monotonic()
    outer_delay, _ = signal.getitimer(signal.ITIMER_REAL)
    if 0 < outer_delay <= seconds:  # an earlier deadline already bounds this block
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise DeadlineExceeded(seconds, what)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:  # give the outer deadline what is left of it (at least a tick)
            left = outer_delay - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))
