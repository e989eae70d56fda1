"""DVC stage `audit`: every protocol's report -> reports/audit/ (a bias card per judged model,
the cross-protocol leaderboard, README).

Usage: ``python pipelines/audit.py``.
"""

from stylisticbias.audit.stage import write_audit
from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    write_audit(load_config())  # every section checked before anything runs


if __name__ == "__main__":
    run(main)
