"""DVC stage `soda`: the SODA audit of an image generator -> data/soda/ (docs/soda.md)."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config, load_params
from stylisticbias.soda.stage import run_soda


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    load_config()  # the typed check of every section, before anything runs
    run_soda(load_params())


if __name__ == "__main__":
    run(main)
