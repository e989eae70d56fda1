"""DVC stage `track`: the written report -> MLflow runs (one per model + comparison).

Usage: ``python pipelines/track.py``.
"""

from dataclasses import asdict

from stylisticbias.benchmark import load_benchmark
from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    config = load_config()  # every section checked before anything runs
    benchmark = load_benchmark(config.protocol)
    task_protocol = bool(benchmark.tasks) and not benchmark.scenarios
    paired = benchmark.statistics.suite == "paired_variation"  # not logged to MLflow yet
    if config.tracking.enabled and not task_protocol and not paired:
        # an unreachable store fails in one line before the report's libraries load
        from stylisticbias.tracking import bounded, preflight, tracking_spec

        spec = tracking_spec({"tracking": asdict(config.tracking)})
        with bounded(spec):
            preflight(spec)
    from stylisticbias.report.track import track_report

    track_report(config)


if __name__ == "__main__":
    run(main)
