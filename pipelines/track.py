"""DVC stage `track`: every protocol's report and the audit -> MLflow runs (a parent run per
model with a child per protocol, the audit run with every protocol's comparison run).

Usage: ``python pipelines/track.py``.
"""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.report.track import track_report


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    track_report(load_config())  # every section checked before anything runs


if __name__ == "__main__":
    run(main)
