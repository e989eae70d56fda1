"""Work computed in forked worker processes equals what a thread computes, in order."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from stylisticbias import forked
from stylisticbias.forked import forked_pool, ordered_map, processes_available


def _closure(data: dict[str, np.ndarray]):
    def fn(name: str) -> tuple[int, float]:
        if name == "bad":
            raise ValueError(f"cannot summarise {name!r}")
        return os.getpid(), float(np.sum(data[name] ** 2))

    return fn


@pytest.mark.skipif(not processes_available(), reason="no fork on this platform")
def test_processes_run_a_closure_and_return_what_a_thread_returns() -> None:
    rng = np.random.default_rng(0)
    data = {f"m{i}": rng.normal(size=1000) for i in range(5)}
    fn = _closure(data)  # a closure: not picklable, inherited by the fork
    with forked_pool(fn, 2) as submit:
        got = {n: submit(n).result() for n in data}
    with forked_pool(fn, 1) as submit:
        want = {n: submit(n).result() for n in data}
    assert {n: v for n, (_, v) in got.items()} == {n: v for n, (_, v) in want.items()}
    assert all(pid != os.getpid() for pid, _ in got.values())  # really in other processes
    assert all(pid == os.getpid() for pid, _ in want.values())
    assert "fn" not in forked._TASK  # released


@pytest.mark.skipif(not processes_available(), reason="no fork on this platform")
def test_a_worker_error_reaches_the_caller() -> None:
    with (
        pytest.raises(ValueError, match="cannot summarise 'bad'"),
        forked_pool(_closure({}), 2) as submit,
    ):
        submit("bad").result()
    assert "fn" not in forked._TASK


@pytest.mark.skipif(not processes_available(), reason="no fork on this platform")
def test_ordered_map_keeps_the_items_order_whatever_finishes_first() -> None:
    data = {f"m{i}": np.arange(i * 1000, dtype=float) for i in (5, 1, 4, 2, 3)}
    summarise = _closure(data)

    def fn(name: str) -> tuple[int, float]:
        time.sleep(0.02 * len(data[name]) / 1000)  # the first items finish last
        return summarise(name)

    got = [v for _, v in ordered_map(fn, list(data), 2)]
    assert got == [float(np.sum(x**2)) for x in data.values()]
    assert [v for _, v in ordered_map(fn, list(data), 1)] == got
    assert "fn" not in forked._TASK
