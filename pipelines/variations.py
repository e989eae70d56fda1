"""DVC stage `variations@PROTOCOL`: render every single-attribute edit ->
data/<protocol>/variations/ (+ gallery).

Usage: ``python pipelines/variations.py --protocol NAME``."""

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
    from stylisticbias.dataset.build import build_variations

    build_variations(config)


if __name__ == "__main__":
    run(main)
