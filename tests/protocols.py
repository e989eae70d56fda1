"""Test helper: a copy of a protocol file with an edit applied (``params["protocol"]`` = path)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "conf" / "benchmark" / "stylisticbias.yaml"
MINI = Path(__file__).parent / "data" / "protocols" / "mini.yaml"


def edited_protocol(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], source: Path = PAPER
) -> str:
    """Write ``source`` with ``edit`` applied to ``tmp_path/<stem>-edited.yaml``; its path."""
    cfg = yaml.safe_load(source.read_text(encoding="utf-8"))
    edit(cfg)
    out = tmp_path / f"{source.stem}-edited.yaml"
    out.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return str(out)
