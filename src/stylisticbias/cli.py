"""Shared entry-point plumbing: logging set-up and the one-line error contract."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger("stylisticbias")


def setup_logging(level: int = logging.INFO) -> None:
    """Log to stderr as ``LEVEL name: message``."""
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", force=True)


def stage(fn: Callable[..., Any]) -> Callable[..., int]:
    """Wrap a stage entry point: bad input becomes one ``error:`` line and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> int:
        setup_logging()
        try:
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
