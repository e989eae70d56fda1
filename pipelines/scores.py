"""DVC stage `scores@MODEL`: phi per image x scenario, delta -> data/scores/model=MODEL/.

Usage: ``python pipelines/scores.py MODEL``.
"""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.scores import write_scores


@stage
def main() -> None:
    """Entry point."""
    args = stage_arguments(__doc__, model=True)
    config = load_config()
    config.model(args.model)  # the model must be judged
    write_scores(args.model, config)


if __name__ == "__main__":
    run(main)
