"""DVC stage `report@PROTOCOL`: one protocol's analysis tables -> reports/<protocol>/ (figures,
README.md, leaderboard, plots), then its manifest data/report_manifests/<protocol>.json (what the
audit and track stages depend on: stylisticbias.report.manifest).

Usage: ``python pipelines/report.py --protocol NAME``."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    config = load_config()  # every section checked before anything runs
    # the stage's libraries (pandas, ...) load once the configuration is known good: a bad
    # value fails in one line without paying for them
    from stylisticbias.config import config_path
    from stylisticbias.report.manifest import write_manifest
    from stylisticbias.report.run import build_report

    build_report(config)
    write_manifest(config_path(config, "data"), config.protocol, config_path(config, "reports"))


if __name__ == "__main__":
    run(main)
