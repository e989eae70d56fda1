"""Benchmark result files: one JSON per benchmark, one entry per model under ``models``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stylisticbias.outputs import atomic_write_text


def merge_model_result(out: Path, name: str, result: dict[str, Any]) -> None:
    """Set ``models.<name>`` of the JSON file ``out`` to ``result`` (others kept), atomically."""
    doc: dict[str, Any] = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    doc.setdefault("models", {})[name] = result
    atomic_write_text(out, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


#: The valid-inference targets every calibration section states (``targets``).
VALID_INFERENCE_TARGETS: dict[str, str] = {
    "null_false_positive_0.05": "[0.03, 0.07], upper CP <= 0.08",
    "null_false_positive_0.01": "<= 0.02",
    "coverage": "[0.93, 0.97]",
}
