"""DVC stage `locality`: pixel-level edit locality of every variation -> data/qa/."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config, load_params
from stylisticbias.qa.stage import build_locality


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    load_config()  # the typed check of every section, before anything runs
    build_locality(load_params())


if __name__ == "__main__":
    run(main)
