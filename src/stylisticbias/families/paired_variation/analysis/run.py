"""The ``analyze`` stage for a paired-variation protocol (``statistics.suite: paired_variation``).

Reads every judged model's scores (``data/scores/model=<model>/``), computes the tables of
:mod:`stylisticbias.families.paired_variation.analysis` one model at a time, and writes them under
``reports/tables/`` (validated against :data:`~stylisticbias.analysis.table_registry.PAIRED_TABLES`)
with ``reports/metrics.json`` (per model: the halo rate and its CI, the share of significant
scenarios per test and category). Tables of the other suite left in the folder are removed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.analysis import table_registry as registry
from stylisticbias.analysis.headline import METRICS_ALL
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.paired_variation.analysis.counts import Bootstrap, paired_data
from stylisticbias.families.paired_variation.analysis.groups import (
    category_rates,
    group_tests,
    stereotype_groups,
)
from stylisticbias.families.paired_variation.analysis.subgroups import (
    group_bias_by_kind,
    subgroup_variation_bias,
)
from stylisticbias.families.paired_variation.analysis.variation import halo_rate, variation_bias
from stylisticbias.outputs import atomic_write_json, round_floats

log = logging.getLogger(__name__)

_SCORE_COLUMNS = (
    "model",
    "face_id",
    "is_base",
    "attribute",
    "value",
    "scenario_id",
    "phi",
    "simulated",
)


def model_tables(
    scores: pd.DataFrame, benchmark: Benchmark, settings: AnalysisSettings
) -> dict[str, pd.DataFrame]:
    """Every paired-variation table for one model's score rows (model column not yet set)."""
    spec = benchmark.statistics
    boot = Bootstrap(settings.n_resamples, settings.ci, settings.seed)
    data = paired_data(scores, benchmark, spec)
    paper = settings.official  # the paper's pooled tests (analysis.definitions: official)
    bias = variation_bias(data, benchmark, spec, boot, paper_tests=paper)
    tests, means = group_tests(data, benchmark, spec, boot, paper_tests=paper)
    zero = settings.wilcoxon_zero_method
    sub_h, sub_w = subgroup_variation_bias(data, benchmark, spec, zero, paper_tests=paper)
    tables = {
        "paired_variation_bias": bias,
        "paired_halo": pd.DataFrame([halo_rate(data, benchmark, spec, boot, paper_tests=paper)]),
        "paired_category_rates": category_rates(bias, tests, benchmark),
        "paired_group_tests": tests,
        "paired_group_means": means,
        "paired_stereotype_groups": stereotype_groups(data, benchmark, spec, paper_tests=paper),
        "paired_subgroup_h": sub_h,
        "paired_subgroup_wilcoxon": sub_w,
        "paired_group_bias_by_kind": group_bias_by_kind(
            data, benchmark, spec, zero, paper_tests=paper, boot=boot
        ),
    }
    if not spec.halo_tag:
        tables.pop("paired_halo")
    return tables


def paired_metrics(tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """``reports/metrics.json``: per model, the halo rate (CI) and the significant shares."""
    out: dict[str, Any] = {}
    halo = tables.get("paired_halo", pd.DataFrame())
    for row in halo.itertuples(index=False):
        out.setdefault(str(row.model), {})["halo"] = {
            "rate": row.halo_rate,
            "ci": [row.halo_rate_low, row.halo_rate_high],
            "n_halo": row.n_halo,
            "n_significant": row.n_significant,
            "n_scenarios": row.n_scenarios,
        }
    rates = tables["paired_category_rates"]
    for row in rates.itertuples(index=False):
        key = (
            "all"
            if row.scenario_category == "all"
            else f"{row.scenario_category}/{row.subcategory}"
        )
        out.setdefault(str(row.model), {}).setdefault("share_significant", {}).setdefault(
            str(row.bias_test), {}
        )[key] = row.share_significant
    return out


def analyze_paired(
    scores_by_model: Mapping[str, pd.DataFrame],
    benchmark: Benchmark,
    settings: AnalysisSettings,
    names: Mapping[str, str] | None = None,
) -> dict[str, pd.DataFrame]:
    """The tables of every model, concatenated, with ``model`` (display name) and
    ``simulated`` columns in registry order."""
    parts: dict[str, list[pd.DataFrame]] = {}
    for model, scores in scores_by_model.items():
        simulated = bool(scores["simulated"].any()) if "simulated" in scores else False
        label = (names or {}).get(model, model)
        for name, df in model_tables(scores, benchmark, settings).items():
            df = df.copy()
            df.insert(0, "model", label)
            df["simulated"] = simulated
            parts.setdefault(name, []).append(df)
    out = {}
    for name, frames in parts.items():
        cols = list(registry.spec(name).columns)
        out[name] = pd.concat(frames, ignore_index=True)[cols]
    return out


def write_paired(tables: Mapping[str, pd.DataFrame], reports: Path) -> None:
    """Write the tables (validated), metrics.json and metrics_all.json (the same numbers: the
    paired headline is every metric it has); remove tables of the other suite."""
    out = reports / "tables"
    registry.write_tables(tables, out)
    for name in set(registry.REGISTRY) - set(tables):
        (out / registry.spec(name).file).unlink(missing_ok=True)
    metrics = round_floats(paired_metrics(tables))
    for name in (METRICS_ALL, "metrics.json"):  # both are outputs of the analyze stage
        atomic_write_json(reports / name, metrics)
    log.info("wrote %d paired-variation tables to %s", len(tables), out)


def run_paired_analysis(
    settings: AnalysisSettings,
    reports: Path,
    analysis_cache: str | None,
    benchmark: Benchmark,
    models: Sequence[str],
    read_scores: Callable[[str], pd.DataFrame],
    names: Mapping[str, str],
) -> None:
    """Stage entry for the paired-variation suite (called by ``run_analysis``)."""
    scores = {}
    for m in models:
        df = read_scores(m)
        missing = [c for c in _SCORE_COLUMNS if c not in df.columns]
        if missing:
            raise StylisticBiasError(f"scores of model {m!r}: missing column(s) {missing}")
        df = df.copy()
        for c in ("attribute", "value", "face_id", "model"):
            df[c] = df[c].astype(object).where(df[c].notna(), None)
        df["phi"] = df["phi"].astype(np.float64)
        scores[m] = df
    write_paired(analyze_paired(scores, benchmark, settings, names), reports)
    if analysis_cache:  # a DVC output of the stage: present though this suite keeps no summaries
        Path(analysis_cache).mkdir(parents=True, exist_ok=True)
