"""Shared entry-point plumbing: logging set-up and the one-line error contract."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger("stylisticbias")


#: Loggers to which Lightning attaches its own stderr handler when it is imported.
LIGHTNING_LOGGERS: tuple[str, ...] = ("lightning", "lightning.pytorch", "lightning.fabric")
#: Lightning's advertisement for its hosted logger, logged on every ``Trainer`` start.
_LIGHTNING_AD = "litlogger"


def _not_lightning_ad(record: logging.LogRecord) -> bool:
    return _LIGHTNING_AD not in record.getMessage()


def adopt_lightning_logging() -> None:
    """Print each of Lightning's log lines once, through the root handler, without its ad.

    Importing ``lightning`` attaches a stderr handler to the ``lightning`` logger (and, when
    the root logger has none yet, to ``lightning.pytorch``/``lightning.fabric``), so with
    :func:`setup_logging`'s root handler every message ("GPU available: ...") came out twice.
    Once the root logger has a handler this removes Lightning's own stream handlers and lets
    its records propagate (other handlers a user added stay). The litlogger tip is dropped
    either way. Call after importing Lightning; :func:`setup_logging` calls it too. Idempotent.
    """
    if "lightning" not in sys.modules:
        return
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        logger = logging.getLogger(name)
        if _not_lightning_ad not in logger.filters:
            logger.addFilter(_not_lightning_ad)
    if not logging.getLogger().handlers:
        return  # nothing above Lightning prints: keep its handlers
    for name in LIGHTNING_LOGGERS:
        logger = logging.getLogger(name)
        for h in list(logger.handlers):
            if type(h) is logging.StreamHandler:  # Lightning's; subclasses (files) are not
                logger.removeHandler(h)
        logger.propagate = True


def setup_logging(level: int = logging.INFO) -> None:
    """Log to stderr as ``LEVEL name: message`` (Lightning's lines too, once each)."""
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", force=True)
    adopt_lightning_logging()


#: why a stage script refuses Hydra overrides (it reads params.yaml, the DVC contract)
_NO_OVERRIDES = (
    "stage scripts read params.yaml and take no Hydra overrides: compose first "
    "(python -m stylisticbias.configure compose faces.n=8 'model=[simulated-weak]'), then run the "
    "stage or `dvc repro`; sweep with `python -m stylisticbias.sweep -m ...` or "
    "`dvc exp run --queue -S ...`"
)


def stage_arguments(doc: str, *, model: bool = False) -> argparse.Namespace:
    """Parse a stage script's command line: ``--protocol NAME`` (the protocol's job: set before
    the stage starts, :func:`stage`), and nothing else or one model name; anything else (e.g.
    ``-m faces.n=4,8``) is an error saying how to change the configuration instead."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0], epilog=_NO_OVERRIDES)
    parser.add_argument(
        "--protocol",
        help="the protocol whose job to run (data/config/<protocol>/resolved.yaml, written by "
        "the check stage); default: the configuration's first protocol",
    )
    if model:
        parser.add_argument("model", help="model name (a key of params.yaml models)")
    args, extra = parser.parse_known_args()
    if extra:
        parser.error(f"unexpected argument(s) {' '.join(extra)}: {_NO_OVERRIDES}")
    return args


def stage_lock_name(argv: list[str] | None = None, params_file: str | None = None) -> str:
    """``analyze``, ``judge-simulated-weak``, ...: the script's name and its arguments.

    A stage reading another params file than ``params.yaml`` (``$STYLISTICBIAS_PARAMS``, set by
    :mod:`stylisticbias.sweep` per job) gets that file's path hash appended
    (``analyze-3f2a9c1d``), so parallel sweep jobs do not refuse each other.
    """
    import hashlib

    from stylisticbias.config import PARAMS_ENV

    argv = sys.argv if argv is None else argv
    parts = [Path(argv[0]).stem, *(a for a in argv[1:] if not a.startswith("-"))]
    params_file = os.environ.get(PARAMS_ENV) if params_file is None else params_file
    if params_file:
        resolved = str(Path(params_file).resolve())
        parts.append(hashlib.sha256(resolved.encode()).hexdigest()[:8])
    return "-".join(p.replace("/", "_") for p in parts if p)


def _protocol_argument(argv: list[str]) -> str | None:
    """The value of ``--protocol NAME`` / ``--protocol=NAME`` in ``argv`` (None: absent)."""
    for i, arg in enumerate(argv):
        if arg == "--protocol" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--protocol="):
            return arg.split("=", 1)[1]
    return None


def stage(fn: Callable[..., Any]) -> Callable[..., int]:
    """Wrap a stage entry point: bad input becomes one ``error:`` line and exit status 2.

    The stage holds a lock named after the script and its arguments (:class:`OutputLock`), so a
    second process running the same stage is refused in one line instead of racing the first
    on the same outputs. (Stages with configurable output paths lock those outputs too.) Before
    the stage starts, every path any stage writes or deletes is checked
    (:func:`stylisticbias.output_paths.check_all_outputs`), so a bad ``paths.*`` value stops
    whichever stage DVC runs first, before anything is touched.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> int:
        from stylisticbias.config import load_params, project_root
        from stylisticbias.output_paths import check_all_outputs
        from stylisticbias.outputs import OutputLock

        setup_logging()
        try:
            protocol = _protocol_argument(sys.argv[1:])
            if protocol:
                from stylisticbias.protocols import use_job

                use_job(protocol)
            with OutputLock(project_root(), Path(f"stage-{stage_lock_name()}")):
                if not {"-h", "--help"} & set(sys.argv[1:]):
                    check_all_outputs(load_params(), project_root())
                fn(*args, **kwargs)
        except StylisticBiasError as exc:
            log.error("error: %s", exc)
            return 2
        except KeyboardInterrupt:
            log.error("interrupted; finished work is kept and a re-run resumes")
            return 130
        return 0

    return wrapper


def run(fn: Callable[..., int]) -> None:
    """``sys.exit(fn())`` -- for ``if __name__ == "__main__"`` blocks."""
    sys.exit(fn())
