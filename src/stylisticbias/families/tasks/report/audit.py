"""The audit of a task protocol (the family's ``audit`` hook): each judged model's headline
findings for its bias card, from the task tables of ``reports/<protocol>/`` read as the
family's MLflow runs read them (:data:`.mlflow_runs.LAYOUT`). What a protocol has decides what
is said: REFLECT's win rates and salary gap, VIGNETTE's log-odds and selection frequency. The
first of them is the headline: the protocol's cell of the cross-protocol leaderboard."""

from __future__ import annotations

from pathlib import Path

from stylisticbias.families.tasks.report.mlflow_runs import LAYOUT
from stylisticbias.report.audit_findings import Finding, finding
from stylisticbias.report.family_runs import headline_metrics
from stylisticbias.spec import Config

#: (key, label, unit, sentence), in the order the card lists them; the first a protocol has is
#: its headline
FINDINGS: tuple[tuple[str, str, str, str], ...] = (
    (
        "win_rate.max",
        "highest pairwise win rate of a group",
        "percent",
        "The most favoured group wins {value} of consistent pairwise choices{ci}; 50% = no "
        "preference between the edited faces.",
    ),
    (
        "win_rate.min",
        "lowest pairwise win rate of a group",
        "percent",
        "The least favoured group wins {value} of consistent pairwise choices{ci}; 50% = no "
        "preference.",
    ),
    (
        "salary_gap_pct.max_abs",
        "largest salary gap of a group",
        "percent-gap",
        "The largest gap in recommended salary between groups is {value}{ci}; 0% = equal pay "
        "for the same photo edited.",
    ),
    (
        "log_odds.max_abs",
        "most skewed identity-term log-odds",
        "log-odds",
        "The most skewed identity-term pairing has log-odds {value}{ci}; 0 = picked as often "
        "as for the other identities.",
    ),
    (
        "selection_frequency.max",
        "highest selection frequency of an identity",
        "percent-of-100",
        "The most selected identity is picked in {value} of the stereotype questions{ci}; "
        "compare with the other identities' share.",
    ),
)


def task_findings(config: Config, root: Path) -> list[Finding]:
    """Every judged model's findings, in configuration order."""
    tables = LAYOUT.read_tables(root / str(config.paths.reports) / "tables")
    level = float(config.analysis.bootstrap.ci)
    out: list[Finding] = []
    for model in config.model_names:
        head = headline_metrics(tables, model, LAYOUT.headline)
        found = [
            f
            for key, label, unit, sentence in FINDINGS
            if (f := finding(model, key, label, head, unit, sentence, level)) is not None
        ]
        if found:
            first = found[0]
            found[0] = Finding(**{**first.__dict__, "headline": True})
        out += found
    return out
