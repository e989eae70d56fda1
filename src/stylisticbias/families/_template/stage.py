"""The template family's own stages: ``analyze`` (scores -> tables) and ``report`` (tables ->
``reports/README.md``). Replace the statistic (mean phi per scenario) by the family's; keep
the signatures (:data:`stylisticbias.family.HOOKS`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from stylisticbias.analysis.run import read_scores_checked, write_csv
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.streaming import StreamStats
from stylisticbias.benchmark import Benchmark
from stylisticbias.outputs import atomic_path
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

#: the family's one table (``reports/tables/<TABLE>.csv``)
TABLE = "template_phi_by_scenario"


def phi_by_scenario(scores: pd.DataFrame, model: str) -> pd.DataFrame:
    """Mean phi per scenario of one model's scores (the family's statistic goes here)."""
    out = scores.groupby("scenario_id", as_index=False)["phi"].mean()
    return out.assign(model=model)[["model", "scenario_id", "phi"]]


def analyze(
    config: Config,
    benchmark: Benchmark,
    s: AnalysisSettings,
    models: Sequence[str],
    t0: float = 0.0,
) -> StreamStats:
    """Every model's table, stacked, -> ``reports/tables/<TABLE>.csv``."""
    score_dir = Path(config.paths.scores)
    tables = [phi_by_scenario(read_scores_checked(score_dir, m), m) for m in models]
    out = Path(config.paths.reports) / "tables"
    out.mkdir(parents=True, exist_ok=True)
    write_csv(pd.concat(tables, ignore_index=True), out / f"{TABLE}.csv")
    log.info("%s: %d model(s) -> %s", benchmark.name, len(models), out)
    return StreamStats(computed=tuple(models), cached=())


def report(config: Config, benchmark: Benchmark, root: Path) -> None:
    """``reports/README.md``: the family's headline (here: the table's name and size)."""
    reports = root / str(config.paths.reports)
    df = pd.read_csv(reports / "tables" / f"{TABLE}.csv")
    text = f"# {benchmark.name}\n\n`tables/{TABLE}.csv`: {len(df)} rows.\n"
    with atomic_path(reports / "README.md") as tmp:
        tmp.write_text(text, encoding="utf-8")
