"""Files a sweep keeps in its directory: ``sweep.json`` (the plan, the MLflow parent run) and
one ``job.json`` per job (status, digest, run id, metrics). They make a sweep resumable and let
the end-of-sweep comparison read every job, whichever launcher (and machine) ran it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError
from stylisticbias.outputs import atomic_write_text

SWEEP_FILE = "sweep.json"
JOB_FILE = "job.json"
#: the table of every job, beside ``sweep.json`` (also logged to the comparison run)
COMPARISON_FILE = "comparison.csv"


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` atomically (temp sibling + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def read_json(path: Path) -> dict[str, Any]:
    """``path`` as a dict; ``{}`` when it does not exist."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise StylisticBiasError(
            f"{path}: not valid JSON ({exc}); delete it to start over"
        ) from None
    if not isinstance(data, dict):
        raise StylisticBiasError(f"{path}: expected a JSON object; delete it to start over")
    return data


def job_records(sweep_dir: Path, datasets: Path | None = None) -> list[dict[str, Any]]:
    """Every ``job.json`` under ``sweep_dir`` (not under ``datasets``), by job number."""
    records = []
    for p in sweep_dir.rglob(JOB_FILE):
        if datasets is not None and p.resolve().is_relative_to(datasets.resolve()):
            continue
        records.append(read_json(p))
    return sorted(records, key=lambda r: (int(r.get("num", 0)), str(r.get("name"))))
