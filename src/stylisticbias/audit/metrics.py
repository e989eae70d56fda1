"""The run-wide headline as a DVC metric: each judged protocol's leaderboard cell per model.

``reports/metrics.json`` (dvc.yaml: the audit stage's metric) holds ``{model: {protocol:
{key: value, key_ci_low: ..., key_ci_high: ...}}}`` -- the same numbers as the audit's
leaderboard -- so ``dvc exp show`` / ``dvc metrics diff`` compare experiments on every protocol's
headline in one file (columns ``<model>.<protocol>.<key>``, ``make exp`` keeps them). Each
protocol's ``reports/<protocol>/metrics.json`` (every interval of its tables) stays a plain
output of its analyze stage.
"""

from __future__ import annotations

import json
from typing import Any

from stylisticbias.audit.collect import Audit

#: the run-wide headline, relative to the project root
RUN_METRICS = "reports/metrics.json"


def run_metrics(audit: Audit) -> dict[str, dict[str, dict[str, float]]]:
    """``{model: {protocol: its headline value and interval}}`` (a protocol without a headline
    for the model is left out; ``.`` in a key becomes ``_``, DVC's column separator)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for model in audit.models:
        for protocol in audit.protocols:
            cell = protocol.headline(model)
            if cell is None:
                continue
            key = cell.key.replace(".", "_")
            values: dict[str, float] = {key: round(float(cell.value), 12)}
            if cell.has_ci:
                values[f"{key}_ci_low"] = round(float(cell.ci_low), 12)  # type: ignore[arg-type]
                values[f"{key}_ci_high"] = round(float(cell.ci_high), 12)  # type: ignore[arg-type]
            out.setdefault(model, {})[protocol.name] = values
    return out


def run_metrics_text(audit: Audit) -> str:
    """:func:`run_metrics` as the file's text (sorted keys, indented, trailing newline)."""
    data: Any = run_metrics(audit)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
