"""The report stage of a paired-variation protocol (the family's ``report`` hook)."""

from __future__ import annotations

from pathlib import Path

from stylisticbias.benchmark import Benchmark
from stylisticbias.families.paired_variation.report.report import build_paired_report
from stylisticbias.spec import Config


def report_paired(config: Config, benchmark: Benchmark, root: Path) -> None:
    """A paired-variation protocol's report (:mod:`.report`)."""
    build_paired_report(config, benchmark, root)
