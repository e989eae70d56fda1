"""DVC stage `report`: analysis tables -> reports/figures/, reports/README.md, MLflow runs."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.report.run import build_report


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    build_report(load_config())  # typed: every section checked before anything runs


if __name__ == "__main__":
    run(main)
