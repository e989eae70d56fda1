"""The audit of a StylisticBias protocol (the family's ``audit`` hook): each judged model's
headline findings for its bias card, from ``reports/<protocol>/metrics.json`` (the analyze
stage's headline: SBS with its interval, the share of significant variations, the invalid
rate). The SBS is the headline: the protocol's cell of the cross-protocol leaderboard."""

from __future__ import annotations

import json
from pathlib import Path

from stylisticbias.report.audit_findings import Finding, finding
from stylisticbias.spec import Config


def shift_findings(config: Config, root: Path) -> list[Finding]:
    """Every judged model's findings (metrics.json's models, in its order)."""
    path = root / str(config.paths.reports) / "metrics.json"
    metrics = json.loads(path.read_text(encoding="utf-8"))
    level = float(config.analysis.bootstrap.ci)
    alpha = float(config.analysis.alpha)
    out: list[Finding] = []
    for model, m in metrics.items():
        if not isinstance(m, dict):
            continue
        flat = {k.replace("_ci_", ".ci_"): v for k, v in m.items()}
        pole = "positive" if float(flat.get("sbs", 0.0) or 0.0) >= 0 else "negative"
        out += [
            f
            for f in (
                finding(
                    model,
                    "sbs",
                    "mean shift of judgments (SBS)",
                    flat,
                    "pp",
                    "One visual edit moves the model's social judgments by {value}{ci} toward "
                    f"the {pole} pole on average; 0 = edits change nothing.",
                    level,
                    headline=True,
                ),
                finding(
                    model,
                    "significant_share",
                    "edits with a significant shift",
                    flat,
                    "percent",
                    "{value} of the edits shift judgments significantly (BH-corrected p < "
                    f"{alpha:g}); without any bias almost none would.",
                    level,
                ),
                finding(
                    model,
                    "invalid_rate",
                    "invalid answers",
                    flat,
                    "percent",
                    "{value} of the answers were invalid (no readable choice); they are left "
                    "out of every score.",
                    level,
                ),
            )
            if f is not None
        ]
    return out
