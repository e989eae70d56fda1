"""DVC stage `judge@MODEL`: forced-choice judgments by one model -> data/judgments/MODEL/.

Usage: ``python pipelines/judge.py MODEL`` (a key of params.yaml ``models``). Resumes an
interrupted run. Multi-GPU/multi-node: set ``lightning:`` under the model's ``engine:`` and
launch with ``torchrun --nproc_per_node N pipelines/judge.py MODEL`` or
``srun python pipelines/judge.py MODEL``.
"""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config


@stage
def main() -> None:
    """Entry point."""
    args = stage_arguments(__doc__, model=True)
    config = load_config()
    config.model(args.model)  # bad settings or an unjudged model fail before heavy imports
    from stylisticbias.judge.run import run_judge

    run_judge(args.model, config)


if __name__ == "__main__":
    run(main)
