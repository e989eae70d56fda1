"""DVC stage `variations`: render every single-attribute edit -> data/variations/ (+ gallery)."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.dataset.build import build_variations


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    build_variations(load_config())  # every section checked before anything runs


if __name__ == "__main__":
    run(main)
