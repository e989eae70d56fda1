"""A scratch project (conf/ copied, cwd) and params selecting generator=import."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from stylisticbias.benchmark import Benchmark, benchmark_from_params
from stylisticbias.config import ROOT, compose

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch project (conf/ copied) as the working directory."""
    shutil.copytree(ROOT / "conf", tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def bench() -> Benchmark:
    """The benchmark definition."""
    return benchmark_from_params(compose())
