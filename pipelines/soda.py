"""DVC stage `soda@PROTOCOL`: the SODA audit of an image generator -> data/<protocol>/audit/
(docs/soda.md), then its manifest data/report_manifests/<protocol>.json (what the audit and track
stages depend on: stylisticbias.report.manifest).

Usage: ``python pipelines/soda.py --protocol soda``."""

from stylisticbias.cli import run, stage, stage_arguments
from stylisticbias.config import load_config
from stylisticbias.soda.stage import run_soda


@stage
def main() -> None:
    """Entry point."""
    stage_arguments(__doc__)
    config = load_config()  # every section typed before anything runs
    out = run_soda(config)
    from stylisticbias.config import config_path
    from stylisticbias.report.manifest import write_manifest

    write_manifest(config_path(config, "data"), config.protocol, out / "tables")


if __name__ == "__main__":
    run(main)
