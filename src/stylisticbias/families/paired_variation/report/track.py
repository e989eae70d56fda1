"""The track stage of a paired-variation protocol (the family's ``track`` hook): its report in
MLflow, one run per judged model and a comparison run
(:func:`stylisticbias.report.family_runs.log_family_report`), laid out by :data:`LAYOUT`."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from stylisticbias.benchmark import Benchmark
from stylisticbias.families.paired_variation.report.report import read_tables
from stylisticbias.report.family_runs import Flat, Headline, RunLayout, log_family_report
from stylisticbias.spec import Config
from stylisticbias.tracking import tracking_spec

#: a model run's headline: the halo rate with its interval, the largest shift of an edit with
#: its interval, the share of significant scenarios, the smallest p of the group tests
LAYOUT = RunLayout(
    family="paired_variation",
    headline=(
        Headline(
            "halo_rate", "paired_halo", "halo_rate", "only", "halo_rate_low", "halo_rate_high"
        ),
        Headline("significant_rate", "paired_halo", "significant_rate", "only"),
        Headline(
            "shift.max_abs", "paired_variation_bias", "shift", "max_abs", "shift_low", "shift_high"
        ),
        Headline(
            "mean_base.max",
            "paired_variation_bias",
            "mean_base",
            "max",
            "mean_base_low",
            "mean_base_high",
        ),
        Headline("group_test_pval.min", "paired_group_tests", "pval", "min"),
        Headline("stereotype_test_pval.min", "paired_stereotype_groups", "pval", "min"),
    ),
    flat=(
        Flat("paired_variation_bias", "shift", ("scenario_id",), "shift_low", "shift_high"),
        Flat("paired_halo", "halo_rate", (), "halo_rate_low", "halo_rate_high"),
        Flat(
            "paired_group_means", "mean", ("scenario_id", "axis", "group"), "mean_low", "mean_high"
        ),
        Flat("paired_group_tests", "h", ("scenario_id", "axis")),
        Flat("paired_stereotype_groups", "h", ("scenario_id", "axis")),
    ),
    read_tables=read_tables,
)


def log_paired_runs(
    config: Config, root: Path, benchmark: Benchmark, digest: str, run_log: dict[str, Any]
) -> None:
    """Log a paired-variation protocol's report (one run per model + comparison) into
    ``run_log``."""
    spec = tracking_spec({"tracking": asdict(config.tracking)})
    run_log["runs"] = log_family_report(config, root / str(config.paths.reports), LAYOUT, digest)
    run_log["tracking_uri"] = spec.tracking_uri
