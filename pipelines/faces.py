"""DVC stage `faces`: sample identities and render base faces -> data/faces/."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.dataset.build import build_faces


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    build_faces(load_config())  # every section checked before anything runs


if __name__ == "__main__":
    run(main)
