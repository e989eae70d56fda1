"""What a decoder returns for one judgment cell: one frozen :class:`Outcome` type (torch-free).

Every decoder of the hf engine (``generate``, ``exact``, ``sampled``) maps one prompt to a list
of :class:`Outcome` -- one per seed, or one with seed 0 for ``exact`` -- and the engine turns
``(item, prompt, outcome)`` into a JUDGMENTS row. The seeded draws of ``sampled`` decoding
(:func:`draw_outcomes`) live here too, so the scores stage and the openai engine use them
without importing the transformers engine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

CHOICES = ("positive", "negative", "invalid")
#: The JUDGMENTS columns in order (``schemas.JUDGMENTS``), as engines build their frames.
COLUMNS = [
    "image_id",
    "face_id",
    "model",
    "engine",
    "decoding",
    "scenario_id",
    "ordering",
    "seed",
    "response",
    "choice",
    "p_pos",
    "p_neg",
    "p_invalid",
    "p_undecided",
    "simulated",
]


def stable_seed(*parts: Any) -> int:
    """A 63-bit seed from sha256 of ``parts`` joined with '|' (stable across runs/platforms)."""
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def draw_outcomes(
    p: Mapping[str, float], seeds: Sequence[int], image_id: str, scenario_id: int, ordering: int
) -> list[str]:
    """K seeded draws of positive/negative/invalid; undecided mass counts as invalid."""
    cats = list(CHOICES)
    w = np.array(
        [p["positive"], p["negative"], p["invalid"] + p.get("undecided", 0.0)], dtype=np.float64
    )
    w = np.clip(w, 0.0, None)
    w = w / w.sum()
    cdf = np.cumsum(w)
    out = []
    for s in seeds:
        u = np.random.default_rng(stable_seed(s, image_id, scenario_id, ordering)).random()
        out.append(cats[min(int(np.searchsorted(cdf, u, side="right")), 2)])
    return out


@dataclass(frozen=True)
class PromptDistribution:
    """The exact outcome distribution of one prompt, in pole terms.

    ``p``: positive / negative / invalid / undecided masses summing to 1; ``best``: outcome ->
    the most probable response text with that outcome.
    """

    p: Mapping[str, float]
    best: Mapping[str, str]


@dataclass(frozen=True)
class Outcome:
    """One decoded judgment cell: seed (0 = the exact distribution), response, choice, masses."""

    seed: int
    response: str | None
    choice: str | None
    p_pos: float
    p_neg: float
    p_invalid: float
    p_undecided: float

    @classmethod
    def sampled_text(cls, seed: int, response: str, choice: str) -> Outcome:
        """A literal ``generate`` answer: one-hot masses on its parsed ``choice``."""
        return cls(
            seed,
            response,
            choice,
            float(choice == "positive"),
            float(choice == "negative"),
            float(choice == "invalid"),
            0.0,
        )

    @classmethod
    def from_distribution(
        cls, d: PromptDistribution, seed: int = 0, choice: str | None = None
    ) -> Outcome:
        """The exact masses of ``d``; with ``choice``, a draw and its representative response."""
        p = d.p
        response = d.best.get(choice) if choice is not None else None
        return cls(
            seed, response, choice, p["positive"], p["negative"], p["invalid"], p["undecided"]
        )

    def columns(self) -> dict[str, Any]:
        """The JUDGMENTS columns this outcome fills."""
        return {
            "seed": self.seed,
            "response": self.response,
            "choice": self.choice,
            "p_pos": self.p_pos,
            "p_neg": self.p_neg,
            "p_invalid": self.p_invalid,
            "p_undecided": self.p_undecided,
        }


def exact_outcomes(
    d: PromptDistribution,
    decoding: str,
    seeds: Sequence[int],
    image_id: str,
    scenario_id: int,
    ordering: int,
) -> list[Outcome]:
    """``exact``: one seed-0 outcome; ``sampled``: a draw per seed (:func:`draw_outcomes`)."""
    if decoding == "exact":
        return [Outcome.from_distribution(d)]
    draws = draw_outcomes(d.p, seeds, image_id, scenario_id, ordering)
    return [Outcome.from_distribution(d, s, c) for s, c in zip(seeds, draws)]
