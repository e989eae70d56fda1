"""``python -m stylisticbias.configure``: compose ``conf/`` into ``params.yaml``, or check it.

The command line of the configuration (above :mod:`stylisticbias.validate` in the layers, so the
library module :mod:`stylisticbias.config` never imports the checks)::

    python -m stylisticbias.configure compose [overrides...]   # rewrite params.yaml
    python -m stylisticbias.configure check [overrides...]     # exit 1 if params.yaml drifted

A bad key or value is one ``error:`` line and exit status 2; ``params.yaml`` is left as it was.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from stylisticbias import config
from stylisticbias.errors import StylisticBiasError
from stylisticbias.validate import validate_params

log = logging.getLogger(__name__)


def write_params(
    overrides: Sequence[str] = (), path: Path | None = None, *, validate: bool = True
) -> Path:
    """Compose ``conf/``, check it (:func:`stylisticbias.validate.validate_params`), write
    ``params.yaml`` (left untouched when a check fails)."""
    path = path or config.project_root() / "params.yaml"
    params = config.compose(overrides)
    if validate:
        validate_params(params)
    path.write_text(config.dump_params(params), encoding="utf-8")
    log.info("wrote %s", path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``compose`` rewrites params.yaml; ``check`` fails when it drifted from conf/."""
    parser = argparse.ArgumentParser(prog="python -m stylisticbias.configure")
    parser.add_argument("command", choices=["compose", "check"])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. faces.n=8")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if args.command == "compose":
            write_params(args.overrides)
            return 0
        params = config.compose(args.overrides)
        validate_params(params)
        want = config.dump_params(params)
        have = (config.project_root() / "params.yaml").read_text(encoding="utf-8")
        if yaml.safe_load(want) != yaml.safe_load(have):
            log.error(
                "params.yaml differs from conf/: run `python -m stylisticbias.configure compose`"
            )
            return 1
        log.info("params.yaml is in sync with conf/")
        return 0
    except StylisticBiasError as exc:
        log.error("error: %s", exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
