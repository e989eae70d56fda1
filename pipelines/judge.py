"""DVC stage `judge@MODEL`: forced-choice judgments by one model -> data/judgments/MODEL/.

Usage: ``python pipelines/judge.py MODEL`` (a name of conf/model/*.yaml). Resumes an interrupted
run. Multi-GPU/multi-node: set ``lightning:`` in conf/engine/<engine>.yaml and launch with
``torchrun --nproc_per_node N pipelines/judge.py MODEL`` or
``srun python pipelines/judge.py MODEL``.
"""

import argparse

from stylisticbias.cli import run, stage
from stylisticbias.config import load_group_option, load_params


@stage
def main() -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="model name (conf/model/<model>.yaml)")
    args = parser.parse_args()
    load_group_option("model", args.model)  # an unknown model fails before the heavy imports
    from stylisticbias.judge.run import run_judge

    run_judge(args.model, load_params())


if __name__ == "__main__":
    run(main)
