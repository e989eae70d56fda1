"""DVC stage ``track``: log the written report to MLflow (one run per model + a comparison).

Split from the ``report`` stage so the report's files (committed to git) and the MLflow store
(local to each machine) are separate outputs: a fresh clone has the report already, but not its
runs, and ``dvc repro`` logs them because this stage's output
(``data/tracking/report_runs.json``, the run ids) is missing there. ``dvc repro -f track``
logs again (e.g. after deleting ``mlflow.db``).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stylisticbias.config import get, project_root
from stylisticbias.report.inputs import load_inputs
from stylisticbias.report.markdown import FigureRecord
from stylisticbias.report.paper_compare import REFERENCE_DIR, compare
from stylisticbias.report.run import scenarios_frame

log = logging.getLogger(__name__)

#: The stage's output, relative to the project root.
RUNS_FILE = Path("data") / "tracking" / "report_runs.json"


def written_figures(figures_dir: Path) -> list[FigureRecord]:
    """The report's PNGs (as the ``report`` stage wrote them), sorted by name."""
    return [FigureRecord(p.stem, p, "", "comparison") for p in sorted(figures_dir.glob("*.png"))]


def track_report(params: dict[str, Any], root: Path | None = None) -> Path:
    """Log ``reports/`` to MLflow when ``tracking.enabled``; write the run ids to RUNS_FILE."""
    root = root or project_root()
    tracking = params.get("tracking") or {}
    out = root / RUNS_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"enabled": bool(tracking.get("enabled", False)), "runs": {}}
    if record["enabled"]:
        from stylisticbias.report.mlflow_log import log_report, resolve_tracking_uri

        inputs = load_inputs(params, root)
        share = float(params.get("analysis", {}).get("pareto_share", 0.8))
        scen = scenarios_frame(params)
        reports = root / str(get(params, "paths.reports"))
        figs = written_figures(reports / "figures")
        cmp = compare(inputs.tables, root / REFERENCE_DIR, scen, share)
        record["runs"] = log_report(params, inputs, figs, cmp, scen, root)
        record["tracking_uri"] = resolve_tracking_uri(str(tracking.get("tracking_uri", "")))
        record["experiment_name"] = tracking.get("experiment_name")
    else:
        log.info("tracking.enabled is false: nothing logged to MLflow")
    record["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out)
    return out
