"""DVC stage `variations`: render every single-attribute edit -> data/variations/ (+ gallery)."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config, load_params
from stylisticbias.dataset.build import build_variations


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    load_config()  # the typed check of every section, before anything runs
    build_variations(load_params())


if __name__ == "__main__":
    run(main)
