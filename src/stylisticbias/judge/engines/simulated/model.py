"""The simulated judge's vectorised probability model and its counter-based randomness.

Every random number comes from a counter-based hash of (model seed, image_id, scenario, ordering,
seed), so results do not depend on batching, on the number of ranks or on resuming.
:func:`simulated_logits` gives the per-image x scenario logit of choosing the positive pole and
:func:`format_shift` the per-ordering position + letter bias added to it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import ndtri

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.simulated.planted import ModelKnobs, PlantedEffects

# purposes of random streams (mixed into the hash so streams are independent)
NOISE, DRAW, TEXT = 1, 2, 3


# ---------------------------------------------------------------------------------------------
# counter-based randomness
# ---------------------------------------------------------------------------------------------
def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser, elementwise on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def id_hash(ids: Sequence[str], model_seed: int) -> np.ndarray:
    """A stable 64-bit key per image id, mixed with the model seed."""
    raw = np.array(
        [
            int.from_bytes(hashlib.blake2b(i.encode(), digest_size=8).digest(), "little")
            for i in ids
        ],
        dtype=np.uint64,
    )
    return _splitmix64(raw ^ _splitmix64(np.array([model_seed], dtype=np.uint64)))


def uniform(key: np.ndarray, *counters: np.ndarray | int) -> np.ndarray:
    """Uniform(0, 1) numbers from a key array and broadcastable integer counters."""
    h = key
    with np.errstate(over="ignore"):
        for c in counters:
            h = _splitmix64(h ^ (np.asarray(c).astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93)))
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 2**53)


# ---------------------------------------------------------------------------------------------
# the core computation
# ---------------------------------------------------------------------------------------------
def _indices(
    attrs: Sequence[Mapping[str, Any]], planted: PlantedEffects
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Group index per axis and variation row per image (row V = base face)."""
    group_ix: dict[str, np.ndarray] = {}
    for axis in DEMOGRAPHIC_AXES:
        lookup = {g: i for i, g in enumerate(planted.groups[axis])}
        try:
            group_ix[axis] = np.array([lookup[a[axis]] for a in attrs], dtype=np.int64)
        except KeyError as exc:
            raise StylisticBiasError(
                f"simulated judge: unknown {axis} {exc.args[0]!r}; valid: "
                + ", ".join(planted.groups[axis])
            ) from None
    base_row = len(planted.value_index)
    rows = []
    for a in attrs:
        if a.get("attribute") is None or (isinstance(a.get("attribute"), float)):
            rows.append(base_row)
            continue
        key = (str(a["attribute"]), str(a["value"]))
        if key not in planted.value_index:
            raise StylisticBiasError(f"simulated judge: unknown variation {key!r}")
        rows.append(planted.value_index[key])
    return group_ix, np.array(rows, dtype=np.int64)


def simulated_logits(
    image_ids: Sequence[str],
    attrs: Sequence[Mapping[str, Any]],
    planted: PlantedEffects,
    knobs: ModelKnobs,
    *,
    noise: bool = True,
) -> np.ndarray:
    """Per-image x scenario logit L (N, S) of choosing the positive pole (before format biases)."""
    group_ix, vrow = _indices(attrs, planted)
    demo = sum(planted.demographics[a][group_ix[a]] for a in DEMOGRAPHIC_AXES)
    var = planted.variations[vrow] + sum(
        planted.interactions[a][vrow, group_ix[a]] for a in DEMOGRAPHIC_AXES
    )
    logit = planted.baseline[None, :] + knobs.effect_scale * (
        demo + planted.sensitivity[None, :] * var
    )
    if noise and knobs.noise_sd > 0 and len(image_ids):
        key = id_hash(image_ids, knobs.seed)
        s = np.arange(logit.shape[1])
        u = uniform(key[:, None], NOISE, s[None, :])
        logit = logit + knobs.noise_sd * ndtri(u)
    return np.asarray(logit, dtype=np.float64)


def format_shift(benchmark: Benchmark, orderings: Sequence[int], knobs: ModelKnobs) -> np.ndarray:
    """Logit shift toward the positive pole per ordering (position + letter bias)."""
    out = []
    for j in orderings:
        o = benchmark.ordering(int(j))
        pos = 1.0 if o.positive_position == 1 else -1.0
        let = 1.0 if o.positive_is_first_letter else -1.0
        out.append(knobs.position_bias * pos + knobs.letter_bias * let)
    return np.array(out)
