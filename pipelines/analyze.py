"""DVC stage `analyze`: all scores (+ judgments) -> reports/tables/*.csv, reports/metrics.json.

Usage: ``python pipelines/analyze.py``.
"""

from stylisticbias.analysis.run import run_analysis
from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    run_analysis(load_config())  # typed: every section checked before anything runs


if __name__ == "__main__":
    run(main)
