"""DVC stage `qa@PROTOCOL`: locality + annotator checks per edit -> data/<protocol>/qa/ (table,
summary, gallery). Usage: ``python pipelines/qa.py --protocol NAME``."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.qa.checks import build_checks


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    build_checks(load_config())  # every section typed before anything runs


if __name__ == "__main__":
    run(main)
