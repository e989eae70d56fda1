"""A task protocol's headline (REFLECT, VIGNETTE) and its tables as the report reads them.

:func:`task_headline` picks the protocol's headline rows (REFLECT: the largest win-rate
spread, MCQ gap and salary Gap% of each model; VIGNETTE: the most and least selected identity,
in percent of the pairs it was shown in against the 50% of no preference, and the strongest
log-odds cell) for ``reports/README.md``; :func:`read_task_tables` reads the
tables the analyze stage wrote. Their MLflow runs:
:mod:`stylisticbias.families.tasks.report.mlflow_runs`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from stylisticbias.families.tasks.analysis.metrics import finite

log = logging.getLogger(__name__)

#: what a VIGNETTE selection frequency is out of, and compared with (pairwise questions)
NO_PREFERENCE = " of the pairs it was shown in (50% = no preference)"
#: what a REFLECT 2AFC win rate is compared with
EVEN = " (0.5 = no preference)"


def task_headline(tables: Mapping[str, pd.DataFrame], model: str) -> list[str]:
    """One line per headline number of ``model`` (point, 95% interval, what it is)."""
    lines = []

    def rows(name: str) -> pd.DataFrame:
        df = tables.get(name)
        return df[df["model"] == model] if df is not None else pd.DataFrame()

    def line(
        what: str, r: pd.Series, col: str, fmt: str = "{:.3g}", unit: str = "", note: str = ""
    ) -> str:
        ci = ""
        if "ci_low" in r.index and finite(r["ci_low"]) is not None:
            ci = f" [{fmt.format(r['ci_low'])}, {fmt.format(r['ci_high'])}]"
        return f"- {model}: {what} {fmt.format(r[col])}{unit}{ci}{note}"

    wr = rows("reflect_win_rates")
    if not wr.empty:
        top, low = wr.loc[wr["win_rate"].idxmax()], wr.loc[wr["win_rate"].idxmin()]
        lines.append(
            line(
                f"highest 2AFC win rate, {top['group']} (task {top['scenario_id']})",
                top,
                "win_rate",
                note=EVEN,
            )
        )
        lines.append(
            line(
                f"lowest 2AFC win rate, {low['group']} (task {low['scenario_id']})",
                low,
                "win_rate",
                note=EVEN,
            )
        )
    for name, col, what in (
        ("reflect_mcq_gaps", "relative_mean_gap", "MCQ relative mean gap"),
        ("reflect_salary_gaps", "gap_pct", "salary Gap%"),
    ):
        df = rows(name)
        if not df.empty:
            r = df.loc[df[col].abs().idxmax()]
            lines.append(line(f"largest {what}, {r['group']} (task {r['scenario_id']})", r, col))
    sel = rows("vignette_selection")
    if not sel.empty:  # S in percent of the pairs an identity was shown in: 50 = no preference
        n = sel["identity"].nunique()
        for rank, r in (
            ("highest", sel.loc[sel["selection_frequency"].idxmax()]),
            ("lowest", sel.loc[sel["selection_frequency"].idxmin()]),
        ):
            task = f" (task {r['scenario_id']})" if sel["scenario_id"].nunique() > 1 else ""
            what = f"{rank} selection frequency of {n} identities, {r['identity']}{task}:"
            lines.append(line(what, r, "selection_frequency", unit="%", note=NO_PREFERENCE))
    lo = rows("vignette_log_odds")
    if not lo.empty:
        r = lo.loc[lo["log_odds"].abs().idxmax()]
        lines.append(
            line(f"strongest log-odds, {r['identity']} for {r['activity']}", r, "log_odds")
        )
    pb = rows("task_position_bias")
    if not pb.empty:
        r = pb.loc[pb["position_bias"].abs().idxmax()]
        lines.append(
            line(f"largest left/right position bias (task {r['scenario_id']})", r, "position_bias")
        )
    return lines


def read_task_tables(tables_dir: Path) -> dict[str, pd.DataFrame]:
    """The task tables the analyze stage wrote (``<table>.csv``)."""
    from stylisticbias.families.tasks.analysis.tables import TASK_REGISTRY

    return {
        n: pd.read_csv(tables_dir / f"{n}.csv")
        for n in TASK_REGISTRY
        if (tables_dir / f"{n}.csv").is_file()
    }
