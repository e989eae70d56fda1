"""Identity sampling: N base identities from the 90-cell demographic grid, deterministic by seed.

Three samplers:

``paper_marginals`` (default)
    Target counts per axis are the paper's observed marginals (App. B.2) scaled to N by the
    largest-remainder method -- at N = 500 they *are* the paper's counts (274/226 male/female,
    260/124/116 young/middle-aged/elderly, 154/186/160 thin/normal/obese,
    110/109/101/95/85 Asian/African/European/Middle Eastern/Latino). Each axis is a vector with
    exactly those counts, shuffled independently with the seed, so every marginal is exact and
    the joint distribution is the independent one in expectation.
``uniform``
    Balanced over the 90 cells: floor(N / 90) full sweeps of the grid plus a seeded random
    subset of distinct cells for the remainder.
``paper_nested``
    The first N identities of the paper's population: ``paper_marginals`` at N = 500 (same
    seed), cut after N rows. A larger N extends a smaller one (the first 100 faces of N = 200
    are the N = 100 faces, with the same ids, demographics and render seeds), which is what a
    sweep over ``faces.n`` needs; marginals are exact only at N = 500. N <= 500.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.sections import SAMPLERS

#: identities in the paper's population (App. B.2); ``paper_nested`` draws its prefixes
PAPER_POPULATION = 500

__all__ = ["SAMPLERS", "face_seed", "largest_remainder", "sample_identities", "target_marginals"]


def largest_remainder(weights: Mapping[str, float], n: int) -> dict[str, int]:
    """Integer counts summing to ``n`` proportional to ``weights`` (Hamilton's method).

    Ties in the remainders are broken by the order of ``weights``, so the result is
    deterministic.
    """
    if n < 0:
        raise StylisticBiasError(f"faces.n must be >= 0, got {n}")
    total = float(sum(weights.values()))
    if total <= 0:
        raise StylisticBiasError("marginal counts must sum to a positive number")
    quotas = {k: n * w / total for k, w in weights.items()}
    counts = {k: int(np.floor(q)) for k, q in quotas.items()}
    short = n - sum(counts.values())
    order = sorted(quotas, key=lambda k: (-(quotas[k] - counts[k]), list(weights).index(k)))
    for k in order[:short]:
        counts[k] += 1
    return counts


def face_seed(global_seed: int, face_id: str) -> int:
    """A stable 31-bit identity seed derived from the global seed and the face id."""
    digest = hashlib.sha256(f"{global_seed}:{face_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def target_marginals(benchmark: Benchmark, n: int) -> dict[str, dict[str, int]]:
    """Per-axis target counts of the ``paper_marginals`` sampler for ``n`` faces."""
    observed = benchmark.observed_marginals
    out: dict[str, dict[str, int]] = {}
    for axis in DEMOGRAPHIC_AXES:
        values = benchmark.demographics[axis]
        weights = observed.get(axis)
        if not weights:
            raise StylisticBiasError(f"{benchmark.source}: observed_marginals.{axis} is missing")
        unknown = set(weights) - set(values)
        if unknown:
            raise StylisticBiasError(
                f"{benchmark.source}: observed_marginals.{axis} has unknown value(s) "
                f"{sorted(unknown)}; valid: {', '.join(values)}"
            )
        out[axis] = largest_remainder({v: float(weights.get(v, 0)) for v in values}, n)
    return out


def sample_identities(
    benchmark: Benchmark, n: int, *, seed: int = 0, sampler: str = "paper_marginals"
) -> pd.DataFrame:
    """Sample ``n`` identities; returns ``face_id, age, gender, ethnicity, body_type, seed``.

    Face ids are ``F0000``, ``F0001``, ... in sampling order.
    """
    if sampler not in SAMPLERS:
        raise StylisticBiasError(f"unknown faces.sampler {sampler!r}; valid: {', '.join(SAMPLERS)}")
    if n < 0:
        raise StylisticBiasError(f"faces.n must be >= 0, got {n}")
    if sampler == "paper_nested":
        if n > PAPER_POPULATION:
            raise StylisticBiasError(
                f"faces.n={n}: faces.sampler=paper_nested draws from the paper's "
                f"{PAPER_POPULATION} identities; use faces.n <= {PAPER_POPULATION} or "
                "faces.sampler=paper_marginals"
            )
        population = sample_identities(benchmark, PAPER_POPULATION, seed=seed)
        return population.iloc[:n].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    columns: dict[str, Sequence[str]]
    if sampler == "paper_marginals":
        columns = {}
        for axis, counts in target_marginals(benchmark, n).items():
            vec = np.array([v for v, c in counts.items() for _ in range(c)], dtype=object)
            columns[axis] = list(rng.permutation(vec))
    else:
        cells = list(itertools.product(*(benchmark.demographics[a] for a in DEMOGRAPHIC_AXES)))
        full, rest = divmod(n, len(cells))
        picked = cells * full + [
            cells[i] for i in sorted(rng.choice(len(cells), rest, replace=False))
        ]
        picked = [picked[i] for i in rng.permutation(len(picked))] if picked else []
        columns = {a: [c[i] for c in picked] for i, a in enumerate(DEMOGRAPHIC_AXES)}
    face_ids = [f"F{i:04d}" for i in range(n)]
    df = pd.DataFrame({"face_id": face_ids, **columns})
    df["seed"] = [face_seed(seed, f) for f in face_ids]
    return df
