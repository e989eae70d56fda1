"""DVC stage `faces@PROTOCOL`: sample identities and render base faces -> data/<protocol>/faces/.

Usage: ``python pipelines/faces.py --protocol NAME`` (the protocol's job, written by the check
stage; without it: the configuration's first protocol)."""

from stylisticbias.benchmark import load_benchmark
from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    config = load_config()  # every section checked before anything runs
    load_benchmark(config.protocol)  # the protocol too (cached for the stage)
    # the stage's libraries (pandas, ...) load once the configuration is known good: a bad
    # value fails in one line without paying for them
    from stylisticbias.dataset.build import build_faces

    build_faces(config)


if __name__ == "__main__":
    run(main)
