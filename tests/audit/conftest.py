"""The audit tests' fixtures over :mod:`audit_plants` (the planted protocol reports)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from audit_plants import configs, plant

from stylisticbias.spec import Config


@pytest.fixture(scope="session")
def audit_configs() -> tuple[Config, dict[str, Config]]:
    """:func:`configs` (composed once a session)."""
    return configs()


@pytest.fixture
def planted(tmp_path: Path) -> Callable[..., Path]:
    """``planted(**kw)``: :func:`plant` under a fresh folder of ``tmp_path``; returns it."""
    count = iter(range(100))

    def make(**kw: Any) -> Path:
        root = tmp_path / f"project{next(count)}"
        plant(root, **kw)
        return root

    return make
