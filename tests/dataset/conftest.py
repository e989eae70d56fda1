"""Shared fixtures of the dataset-stage tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stylisticbias.config import project_root

HERE = Path(__file__).parent


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch project (conf/ copied) as the working directory; ``fake_generator`` importable."""
    shutil.copytree(project_root() / "conf", tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(HERE))
    return tmp_path
