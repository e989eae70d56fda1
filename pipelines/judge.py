"""DVC stage `judge@MODEL`: forced-choice judgments by one model -> data/judgments/MODEL/.

Usage: ``python pipelines/judge.py MODEL`` (a key of params.yaml ``models``). Resumes an
interrupted run. Multi-GPU/multi-node: set ``lightning:`` under the model's ``engine:`` and
launch with ``torchrun --nproc_per_node N pipelines/judge.py MODEL`` or
``srun python pipelines/judge.py MODEL``.
"""

from dataclasses import asdict

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.judge.preflight import check_model


@stage
def main() -> None:
    """Entry point."""
    args = stage_arguments(__doc__, model=True)
    config = load_config()
    spec = config.model(args.model)  # bad settings or an unjudged model fail before heavy imports
    if not config.judge.dry_run:  # missing weights, endpoint down, no key: before any output
        model = asdict(spec)
        check_model(model, model.get("engine") or {})
    from stylisticbias.judge.run import run_judge

    run_judge(args.model, config)


if __name__ == "__main__":
    run(main)
