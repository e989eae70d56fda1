"""DVC stage `report`: analysis tables -> reports/figures/, reports/README.md, MLflow runs."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config, load_params
from stylisticbias.report.run import build_report


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    load_config()  # the typed check of every section, before anything runs
    build_report(load_params())


if __name__ == "__main__":
    run(main)
