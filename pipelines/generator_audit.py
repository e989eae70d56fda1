"""DVC stage `generator_audit@PROTOCOL`: the variation generator's own bias -> data/<protocol>/qa/.

Usage: ``python pipelines/generator_audit.py --protocol NAME``."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.soda.generator_audit import build_generator_audit


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    build_generator_audit(load_config())  # every section typed before anything runs


if __name__ == "__main__":
    run(main)
