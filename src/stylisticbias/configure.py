"""``python -m stylisticbias.configure``: compose ``conf/`` into ``params.yaml``, or check it.

The command line of the configuration (above :mod:`stylisticbias.validate` in the layers, so the
library module :mod:`stylisticbias.config` never imports the checks)::

    python -m stylisticbias.configure compose [overrides...]   # rewrite params.yaml
    python -m stylisticbias.configure check [overrides...]     # exit 1 if params.yaml drifted

``params.yaml`` is the experiment's view (:mod:`stylisticbias.params_view`): ``compose``
regenerates ``conf/dvc/`` from ``conf/``, writes the view of ``conf/`` with the overrides (what
``dvc exp run -S`` would write), checks the whole configuration it stands for and writes
``data/config/`` (:mod:`stylisticbias.stage_inputs`), so tools read the same configuration the
next ``dvc repro`` will. A bad key or value is one ``error:`` line and exit status 2;
``params.yaml`` is left as it was.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stylisticbias import config, params_view
from stylisticbias.errors import StylisticBiasError
from stylisticbias.protocols import jobs as protocol_jobs
from stylisticbias.stage_inputs import write_stage_inputs
from stylisticbias.validate import validate_params

log = logging.getLogger(__name__)


def compose_view(
    overrides: Sequence[str] = (), *, checked: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The view (``params.yaml``) of ``conf/`` with ``overrides`` and the whole configuration it
    stands for, checked (:func:`stylisticbias.validate.validate_params`). ``checked``: the
    composition of ``conf/`` with ``overrides`` already succeeded (it is not repeated)."""
    if not checked:
        config.compose(overrides)  # the overrides themselves, worded against conf/ on error
    view = params_view.compose_view(params_view.view_overrides(overrides))
    params = params_view.full_params(view, where=f"conf/ with {' '.join(overrides)}".strip())
    validate_params(params)
    return view, params


def write_params(
    overrides: Sequence[str] = (), path: Path | None = None, *, validate: bool = True
) -> Path:
    """Regenerate ``conf/dvc/``, compose and check, write ``params.yaml`` (the view) and
    ``data/config/`` (left untouched when a check fails)."""
    root = config.project_root()
    path = path or root / "params.yaml"
    if validate:
        # fail fast: one composition and its checks reject a bad key or value before the views
        # are composed (conf/dvc/ composes every experiment)
        validate_params(config.compose(overrides))
    params_view.write_view_conf()
    if validate:
        view, params = compose_view(overrides, checked=True)
    else:
        view = params_view.compose_view(params_view.view_overrides(overrides))
        params = params_view.full_params(view)
    path.write_text(params_view.dump_view(view), encoding="utf-8")
    write_stage_inputs(params, root, protocol_jobs(view))
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
        # params.yaml first: a file that does not read is one line before any composition
        have = config.load_yaml_file(config.project_root() / "params.yaml")
        drift = params_view.view_conf_drift()
        if drift:
            log.error(
                "conf/dvc/ differs from conf/ (%s): run `python -m stylisticbias.configure "
                "compose`",
                ", ".join(drift[:3]),
            )
            return 1
        view, _ = compose_view(args.overrides)
        if view != have:
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
