"""The ``judge`` section as a typed spec, checked before a judge run touches its output."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stylisticbias.benchmark import select_ids
from stylisticbias.errors import StylisticBiasError

IMAGE_SETS = ("evaluated", "all")


def _int_list(value: Any, key: str) -> list[int]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise StylisticBiasError(f"{key}={value!r}: must be a list of integers, e.g. [1, 2, 3]")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise StylisticBiasError(f"{key}: {v!r} is not an integer")
        try:
            out.append(int(v))
        except ValueError:
            raise StylisticBiasError(f"{key}: {v!r} is not an integer") from None
    if not out:
        raise StylisticBiasError(f"{key}=[]: must list at least one value")
    dup = sorted({v for v in out if out.count(v) > 1})
    if dup:
        raise StylisticBiasError(f"{key}={out}: repeated value(s) {dup}; each may appear once")
    return out


def selected_orderings(judge_cfg: Mapping[str, Any], ordering_ids: Sequence[int]) -> list[int]:
    """``judge.orderings`` resolved against the protocol (:func:`~stylisticbias.benchmark.
    select_ids`): ``all`` (or absent) is every ordering of the protocol."""
    raw = judge_cfg.get("orderings", "all")
    if raw is not None and raw != "all":
        _int_list(raw, "judge.orderings")  # type errors, empty list, repeats
    return select_ids("orderings", raw, ordering_ids)


@dataclass(frozen=True)
class JudgeSettings:
    """What every engine shares: which images, orderings, seeds and the decoding protocol."""

    images: str
    orderings: tuple[int, ...]
    seeds: tuple[int, ...]
    temperature: float
    max_new_tokens: int

    @classmethod
    def from_config(
        cls, judge_cfg: Mapping[str, Any], ordering_ids: Sequence[int]
    ) -> JudgeSettings:
        """Parse and check ``judge_cfg``; one :class:`StylisticBiasError` line per bad key.

        ``ordering_ids``: the protocol's orderings (``Benchmark.ordering_ids``).
        """
        images = str(judge_cfg.get("images", "evaluated"))
        if images not in IMAGE_SETS:
            raise StylisticBiasError(f"judge.images={images!r}; valid: {', '.join(IMAGE_SETS)}")
        orderings = selected_orderings(judge_cfg, ordering_ids)
        seeds = _int_list(judge_cfg.get("seeds", [1, 2, 3]), "judge.seeds")
        if min(seeds) < 1:
            raise StylisticBiasError(
                f"judge.seeds={seeds}: seeds must be >= 1 (seed 0 marks exact-distribution rows)"
            )
        raw_t = judge_cfg.get("temperature", 0.2)
        try:
            temperature = float(raw_t)
        except (TypeError, ValueError):
            raise StylisticBiasError(f"judge.temperature={raw_t!r}: must be a number") from None
        if not math.isfinite(temperature) or not 0 < temperature <= 5:
            raise StylisticBiasError(
                f"judge.temperature={raw_t!r}: must be a number in (0, 5] (the paper uses 0.2)"
            )
        raw_m = judge_cfg.get("max_new_tokens", 16)
        if isinstance(raw_m, bool) or not isinstance(raw_m, int) or raw_m < 1:
            raise StylisticBiasError(
                f"judge.max_new_tokens={raw_m!r}: must be an integer >= 1 (the paper uses 16)"
            )
        return cls(images, tuple(orderings), tuple(seeds), temperature, int(raw_m))
