"""DVC stage `scores@MODEL`: phi per image x scenario, delta -> data/scores/model=MODEL/.

Usage: ``python pipelines/scores.py MODEL``.
"""

import argparse

from stylisticbias.cli import run, stage
from stylisticbias.config import load_config, load_params
from stylisticbias.scores import write_scores


@stage
def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="model name (a key of params.yaml models)")
    args = parser.parse_args()
    load_config()  # the typed check of every section, before anything runs
    write_scores(args.model, load_params())


if __name__ == "__main__":
    run(main)
