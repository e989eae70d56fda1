"""The audit of a paired-variation protocol (the family's ``audit`` hook): each judged model's
headline findings for its bias card, from the tables of ``reports/<protocol>/`` read as the
family's MLflow runs read them (:data:`.track.LAYOUT`: the halo rate and the largest shift of
the edit, each with its interval). The halo rate is the headline: the protocol's cell of the
cross-protocol leaderboard."""

from __future__ import annotations

from pathlib import Path

from stylisticbias.families.paired_variation.report.track import LAYOUT
from stylisticbias.report.audit_findings import Finding, finding
from stylisticbias.report.family_runs import headline_metrics
from stylisticbias.spec import Config


def paired_findings(config: Config, root: Path) -> list[Finding]:
    """Every judged model's findings, in configuration order (a model without rows: none)."""
    tables = LAYOUT.read_tables(root / str(config.paths.reports) / "tables")
    level = float(config.analysis.bootstrap.ci)
    out: list[Finding] = []
    for model in config.model_names:
        head = headline_metrics(tables, model, LAYOUT.headline)
        toward = "favourable" if float(head.get("shift.max_abs", 0.0) or 0.0) >= 0 else "worse"
        out += [
            f
            for f in (
                finding(
                    model,
                    "halo_rate",
                    "halo rate",
                    head,
                    "percent",
                    "In {value} of the halo scenarios{ci} the beautified photo is judged "
                    "significantly more favourably than the original; 0% = no halo.",
                    level,
                    headline=True,
                ),
                finding(
                    model,
                    "shift.max_abs",
                    "largest shift from the edit",
                    head,
                    "pp",
                    "The edit's largest shift in one scenario is {value}{ci}, toward the "
                    f"{toward} answer; 0 = the edit changes nothing.",
                    level,
                ),
            )
            if f is not None
        ]
    return out
