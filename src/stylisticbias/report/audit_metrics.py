"""The run-wide headline: every judged protocol's ``metrics.json``, nested per model and protocol.

``reports/metrics.json`` (the audit stage's DVC metric) holds ``{model: {protocol: {metric:
value}}}``, so ``dvc exp show`` and ``dvc metrics diff`` compare experiments on every protocol's
headline in one file (columns ``<model>.<protocol>.<metric>``); each protocol's own
``reports/<protocol>/metrics.json`` stays a plain output of its analyze stage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stylisticbias.errors import StylisticBiasError
from stylisticbias.outputs import atomic_write_json

if TYPE_CHECKING:
    from stylisticbias.spec import Config

#: the run-wide headline (dvc.yaml: the audit stage's metric)
RUN_METRICS = "reports/metrics.json"


def run_metrics(jobs: Mapping[str, Config], root: Path) -> dict[str, dict[str, Any]]:
    """``{model: {protocol: that protocol's headline metrics of the model}}`` over every judged
    protocol's job (a missing ``metrics.json`` is one line naming it and the stage to run)."""
    out: dict[str, dict[str, Any]] = {}
    for protocol, job in jobs.items():
        if protocol not in job.protocols:  # a generator audit (SODA): no judged model
            continue
        reports = Path(job.paths.reports)
        path = (reports if reports.is_absolute() else root / reports) / "metrics.json"
        try:
            metrics = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StylisticBiasError(
                f"{path}: {type(exc).__name__}: the headline of protocol {protocol} is missing or "
                f"unreadable; run its analysis first (dvc repro analyze@{protocol})"
            ) from None
        for model, values in sorted(metrics.items()):
            out.setdefault(str(model), {})[protocol] = values
    return out


def write_run_metrics(jobs: Mapping[str, Config], root: Path) -> Path:
    """Write :data:`RUN_METRICS` under ``root``; returns its path."""
    path = root / RUN_METRICS
    atomic_write_json(path, run_metrics(jobs, root))
    return path
