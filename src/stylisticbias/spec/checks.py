"""Range and choice checks shared by the specs' ``__post_init__`` (one error line each)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from stylisticbias.errors import StylisticBiasError


def choice(key: str, value: Any, valid: Iterable[str]) -> None:
    """``value`` must be one of ``valid``."""
    valid = tuple(valid)
    if value not in valid:
        raise StylisticBiasError(f"{key}={value!r}; valid: {', '.join(map(str, valid))}")


def at_least(key: str, value: Any, low: float, hint: str = "") -> None:
    """``value`` must be a number >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < low:
        raise StylisticBiasError(f"{key}={value!r}: must be a number >= {low:g}{hint}")


def in_open_unit(key: str, value: Any) -> None:
    """``value`` must lie in (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise StylisticBiasError(f"{key}={value!r}: must lie in (0, 1)")


def finite_in(key: str, value: float, low: float, high: float, hint: str = "") -> None:
    """``low < value <= high``."""
    if not math.isfinite(value) or not low < value <= high:
        raise StylisticBiasError(f"{key}={value!r}: must be a number in ({low:g}, {high:g}]{hint}")


def unique_ints(key: str, values: Sequence[int], *, minimum: int | None = None) -> None:
    """A non-empty list of distinct integers (each >= ``minimum``)."""
    if not values:
        raise StylisticBiasError(f"{key}=[]: must list at least one value")
    dup = sorted({v for v in values if list(values).count(v) > 1})
    if dup:
        raise StylisticBiasError(
            f"{key}={list(values)}: repeated value(s) {dup}; each may appear once"
        )
    if minimum is not None and min(values) < minimum:
        raise StylisticBiasError(f"{key}={list(values)}: values must be >= {minimum}")
