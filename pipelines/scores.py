"""DVC stage `scores@PROTOCOL-MODEL`: phi per image x scenario, delta (or the task scores) ->
data/<protocol>/scores/model=MODEL/.

Usage: ``python pipelines/scores.py --protocol NAME MODEL``.
"""

import gc

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.scores_ahead import keep_freed_memory, no_huge_pages, read_ahead


@stage
def main() -> None:
    """Entry point."""
    # a short-lived process that makes little cyclic garbage: no collections while the libraries
    # load, and none of the heap at exit (the interpreter's final ones took 30 ms of the stage)
    gc.disable()
    args = stage_arguments(__doc__, model=True)
    keep_freed_memory()
    no_huge_pages()
    # the judgments are read in a thread while the configuration is parsed and the scoring
    # engine imported (hence the late import): the read is most of the stage
    with read_ahead(args.model) as ahead:
        config = load_config()
        config.model(args.model)  # the model must be judged
        from stylisticbias.scores import write_scores

        write_scores(args.model, config, ahead=ahead)
    gc.freeze()


if __name__ == "__main__":
    run(main)
