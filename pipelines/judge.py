"""DVC stage `judge@PROTOCOL-MODEL`: one model's judgments under one protocol ->
data/<protocol>/judgments/MODEL/.

Usage: ``python pipelines/judge.py --protocol NAME MODEL`` (a key of params.yaml ``models``).
Resumes an interrupted run. Multi-GPU/multi-node: set ``lightning:`` under the model's
``engine:`` and launch with ``torchrun --nproc_per_node N pipelines/judge.py --protocol NAME
MODEL`` or ``srun python pipelines/judge.py --protocol NAME MODEL``.
"""

from dataclasses import asdict

from stylisticbias.benchmark import load_benchmark
from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.judge.preflight import check_model
from stylisticbias.judge.protocol.settings import check_judge_section


@stage
def main() -> None:
    """Entry point."""
    args = stage_arguments(__doc__, model=True)
    config = load_config()
    spec = config.model(args.model)  # bad settings or an unjudged model fail before heavy imports
    # judge settings against the protocol (orderings=[5], unknown scenarios): before any table
    # is read or the judging libraries (torch, lightning) are imported
    check_judge_section(asdict(config.judge), load_benchmark(config.protocol))
    if not config.judge.dry_run:  # missing weights, endpoint down, no key: before any output
        model = asdict(spec)
        check_model(model, model.get("engine") or {})
    from stylisticbias.judge.run import run_judge

    run_judge(args.model, config)


if __name__ == "__main__":
    run(main)
