"""DVC stage `report`: analysis tables -> reports/figures/, reports/README.md, MLflow runs."""

from stylisticbias.cli import run, stage
from stylisticbias.config import load_params
from stylisticbias.report.run import build_report


@stage
def main() -> None:
    """Entry point."""
    build_report(load_params())


if __name__ == "__main__":
    run(main)
