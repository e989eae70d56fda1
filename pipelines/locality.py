"""DVC stage `locality@PROTOCOL`: pixel-level edit locality of every variation ->
data/<protocol>/qa/.

Usage: ``python pipelines/locality.py --protocol NAME``."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.qa.stage import build_locality


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    build_locality(load_config())  # every section typed before anything runs


if __name__ == "__main__":
    run(main)
