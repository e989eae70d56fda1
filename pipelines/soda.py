"""DVC stage `soda`: the SODA audit of an image generator -> data/soda/ (docs/soda.md)."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.soda.stage import run_soda


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    run_soda(load_config())  # every section typed before anything runs


if __name__ == "__main__":
    run(main)
