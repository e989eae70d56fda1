"""DVC stage `analyze@PROTOCOL`: all models' scores (+ judgments) of one protocol ->
reports/<protocol>/tables/*.csv, reports/<protocol>/metrics.json.

Usage: ``python pipelines/analyze.py --protocol NAME``.
"""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    config = load_config()  # every section checked before anything runs
    # the stage's libraries (pandas, ...) load once the configuration is known good: a bad
    # value fails in one line without paying for them
    from stylisticbias.analysis.run import run_analysis

    run_analysis(config)


if __name__ == "__main__":
    run(main)
