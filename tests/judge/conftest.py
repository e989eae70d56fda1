"""Shared fixtures for the judge tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from stylisticbias.benchmark import Benchmark, benchmark_from_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def benchmark() -> Benchmark:
    cfg = yaml.safe_load((ROOT / "conf" / "benchmark" / "stylisticbias.yaml").read_text())
    return benchmark_from_config(cfg)
