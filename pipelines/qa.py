"""DVC stage `qa`: locality + annotator checks per edit -> data/qa/ (table, summary, gallery)."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config, load_params
from stylisticbias.qa.checks import build_checks


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    load_config()  # the typed check of every section, before anything runs
    build_checks(load_params())


if __name__ == "__main__":
    run(main)
