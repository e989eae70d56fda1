"""Shared fixtures for the judge tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from stylisticbias.benchmark import Benchmark, benchmark_from_config

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # judge_tables, for every subfolder


@pytest.fixture(scope="session")
def benchmark() -> Benchmark:
    cfg = yaml.safe_load((ROOT / "conf" / "benchmark" / "stylisticbias.yaml").read_text())
    return benchmark_from_config(cfg)
