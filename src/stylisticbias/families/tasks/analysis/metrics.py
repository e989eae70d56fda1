"""One model's task tables as flat metrics (``reports/metrics.json``, MLflow, sweeps).

Every row of a table with an interval gives ``<table>.<task>.<key>`` and its ``.ci_low`` /
``.ci_high`` (and ``.pval`` where the table tests); every tested row without an interval its
statistic and ``.pval``; a table of the paper's Fisher tests its estimate and
``.pval_fisher``. Names keep MLflow's characters (others become ``_``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

#: table -> (the estimate column, the key columns naming a row)
INTERVAL_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "reflect_win_rates": ("win_rate", ("scenario_id", "group")),
    "reflect_mcq_gaps": ("relative_mean_gap", ("scenario_id", "group")),
    "reflect_salary_gaps": ("gap_pct", ("scenario_id", "group")),
    "task_position_bias": ("position_bias", ("scenario_id",)),
    "vignette_selection": ("selection_frequency", ("scenario_id", "identity")),
    "vignette_log_odds": ("log_odds", ("activity", "identity")),
}
#: tested tables without an interval: (the statistic column, the key columns)
TEST_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "reflect_salary_tests": ("f_stat", ("scenario_id", "effect")),
    "vignette_text_vs_image": ("delta", ("scenario_id", "identity")),
    "vignette_factuality_tests": ("statistic", ("setting", "question", "test")),
}
#: tables of the paper's Fisher tests: (the estimate column, the key columns)
FISHER_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "vignette_factuality": ("factuality", ("setting", "question", "identity")),
}
_BAD = re.compile(r"[^A-Za-z0-9_\-./ ]")


def _key(table: str, row: pd.Series, keys: tuple[str, ...]) -> str:
    parts = [table, *(str(row[k]) for k in keys)]
    return _BAD.sub("_", ".".join(parts))


def finite(x: Any) -> float | None:
    """``x`` as a finite float, else None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def task_metrics(tables: Mapping[str, pd.DataFrame], model: str) -> dict[str, float]:
    """Every interval and test of ``model``'s rows as flat metrics (see the module doc)."""
    out: dict[str, float] = {}
    for table, (col, keys) in {**INTERVAL_TABLES, **TEST_TABLES, **FISHER_TABLES}.items():
        df = tables.get(table)
        if df is None or df.empty:
            continue
        for _, row in df[df["model"] == model].iterrows():
            k = _key(table, row, keys)
            for suffix, c in (
                ("", col),
                (".ci_low", "ci_low"),
                (".ci_high", "ci_high"),
                (".pval", "pval"),
                (".pval_fisher", "pval_fisher" if table in FISHER_TABLES else ""),
            ):
                v = finite(row[c]) if c in row.index else None
                if v is not None:
                    out[k + suffix] = v
    return out
