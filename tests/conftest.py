"""Shared fixtures: composed params and the benchmark definition."""

from __future__ import annotations

from typing import Any

import pytest

from stylisticbias.benchmark import Benchmark, benchmark_from_params
from stylisticbias.config import compose


@pytest.fixture(scope="session")
def default_params() -> dict[str, Any]:
    """conf/ composed with no overrides (the demo experiment)."""
    return compose()


@pytest.fixture(scope="session")
def benchmark(default_params: dict[str, Any]) -> Benchmark:
    """The paper's benchmark definition."""
    return benchmark_from_params(default_params)
