"""Each xdist worker gets its share of the cores in every BLAS/OpenMP pool."""

from __future__ import annotations

import os

import pytest
from threadpoolctl import threadpool_info

from stylisticbias_dev.worker_threads import (
    THREAD_VARIABLES,
    threads_per_worker,
    worker_thread_settings,
)


def test_threads_per_worker_shares_the_cores() -> None:
    assert threads_per_worker(2, 2) == 1
    assert threads_per_worker(2, 16) == 8
    assert threads_per_worker(3, 2) == 1  # never zero
    assert threads_per_worker(0, 4) == 4


def test_outside_a_worker_nothing_changes() -> None:
    env: dict[str, str] = {"PATH": "/bin"}
    assert worker_thread_settings(env, 2) is None
    assert env == {"PATH": "/bin"}


def test_a_worker_gets_its_share_unless_the_user_chose() -> None:
    env = {"PYTEST_XDIST_WORKER_COUNT": "2"}
    assert worker_thread_settings(env, 16) == 8
    assert all(env[v] == "8" for v in THREAD_VARIABLES)
    env = {"PYTEST_XDIST_WORKER_COUNT": "2", "OMP_NUM_THREADS": "3"}
    assert worker_thread_settings(env, 16) == 3
    assert env["OMP_NUM_THREADS"] == "3" and env["OPENBLAS_NUM_THREADS"] == "8"


@pytest.mark.skipif("PYTEST_XDIST_WORKER_COUNT" not in os.environ, reason="not an xdist worker")
def test_this_worker_runs_capped_pools() -> None:
    import torch

    cap = int(os.environ["OMP_NUM_THREADS"])
    assert torch.get_num_threads() == cap
    assert all(p["num_threads"] <= cap for p in threadpool_info()), threadpool_info()
