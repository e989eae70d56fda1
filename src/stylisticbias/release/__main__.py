"""``python -m stylisticbias.release``: write the publishable dataset folder (docs/release.md).

Reads params.yaml (the ``release`` section and the DVC outputs it names); nothing is uploaded.
Bad input is one ``error:`` line and exit status 2, with the previous release left whole.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import replace
from pathlib import Path

from stylisticbias.cli import run, stage
from stylisticbias.config import load_config
from stylisticbias.errors import StylisticBiasError
from stylisticbias.release.build import build_release

log = logging.getLogger(__name__)


def validate_croissant(path: Path) -> None:
    """Run mlcroissant's validator on ``path``: errors raise, warnings are logged."""
    try:
        import mlcroissant as mlc
    except ImportError as exc:
        raise StylisticBiasError(
            "--validate needs the mlcroissant library: pip install '.[release]'"
        ) from exc
    try:
        ds = mlc.Dataset(path)
    except mlc.ValidationError as exc:
        raise StylisticBiasError(f"{path}: {exc}".replace("\n", " ")) from exc
    issues = ds.metadata.ctx.issues
    for warning in sorted(issues.warnings):
        log.warning("%s: %s", path, warning)
    log.info("%s: valid Croissant (%d warning(s))", path, len(issues.warnings))


@stage
def main() -> None:
    """Entry point: optional ``--out DIR`` overrides ``release.out``."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--out", help="the folder to write (default: release.out of params.yaml)")
    parser.add_argument(
        "--no-judgments", action="store_true", help="leave out judgments and scores"
    )
    parser.add_argument(
        "--validate",
        action="store_true",
        help="check croissant.json with mlcroissant afterwards (pip install '.[release]')",
    )
    args = parser.parse_args()
    config = load_config()  # every section checked before anything is written
    if args.out:
        config = replace(config, release=replace(config.release, out=args.out))
    if args.no_judgments:
        config = replace(config, release=replace(config.release, judgments=False))
    result = build_release(config)
    if args.validate:
        validate_croissant(result.out / "croissant.json")


if __name__ == "__main__":
    run(main)
