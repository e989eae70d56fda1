"""DVC stage `report`: analysis tables -> reports/figures/, reports/README.md, MLflow runs."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    config = load_config()  # every section checked before anything runs
    # the stage's libraries (pandas, ...) load once the configuration is known good: a bad
    # value fails in one line without paying for them
    from stylisticbias.report.run import build_report

    build_report(config)


if __name__ == "__main__":
    run(main)
