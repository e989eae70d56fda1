"""The total deadline of one blocking call (``tracking.deadline.call_deadline``).

What ends a call, and what is left armed afterwards, never how many seconds passed: every
deadline here is far shorter than anything it competes with (a 30 s read timeout), so the
outcome is the same on an idle or a loaded machine.
"""

from __future__ import annotations

import signal
import socket
import threading

import pytest

from stylisticbias.tracking.deadline import DeadlineExceeded, call_deadline

#: a per-read timeout no deadline of these tests comes near
READ_TIMEOUT_S = 30.0


def test_a_trickling_peer_is_cut_by_the_total_deadline() -> None:
    """Every read gets a byte long before its timeout; only the total deadline ends the loop,
    and it is not a ``TimeoutError`` that a retrying client would swallow."""
    previous = signal.getsignal(signal.SIGALRM)
    ours, theirs = socket.socketpair()
    ours.settimeout(READ_TIMEOUT_S)
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.01):
            try:
                theirs.send(b"x")
            except OSError:
                return

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        with pytest.raises(DeadlineExceeded) as info, call_deadline(0.2, "GET /slow"):
            while True:
                ours.recv(1)
    finally:
        stop.set()
        t.join()
        ours.close()
        theirs.close()
    assert not isinstance(info.value, Exception)  # a BaseException: urllib3 cannot retry it
    assert "GET /slow did not finish within 0.2 s" in str(info.value)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # nothing left armed
    assert signal.getsignal(signal.SIGALRM) == previous


def test_nested_deadlines_keep_the_earliest_and_rearm_the_outer() -> None:
    previous = signal.getsignal(signal.SIGALRM)
    with call_deadline(READ_TIMEOUT_S, "outer"):
        outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < outer_left <= READ_TIMEOUT_S
        with call_deadline(2 * READ_TIMEOUT_S, "later"):  # the outer one still bounds this
            left, _ = signal.getitimer(signal.ITIMER_REAL)
            assert 0 < left <= outer_left
        with (
            pytest.raises(DeadlineExceeded, match="inner did not finish"),
            call_deadline(0.05, "inner"),
        ):
            threading.Event().wait(READ_TIMEOUT_S)  # interrupted by the inner deadline
        left, _ = signal.getitimer(signal.ITIMER_REAL)  # the outer one, re-armed
        assert 0 < left <= outer_left
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == previous


def test_outside_the_main_thread_the_block_runs_unbounded() -> None:
    seen: list[tuple[float, float]] = []

    def work() -> None:
        with call_deadline(0.01, "thread"):
            seen.append(signal.getitimer(signal.ITIMER_REAL))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [(0.0, 0.0)]  # nothing armed: SIGALRM reaches only the main thread
