"""The exact distribution of one prompt's parse verdict, shared by every exact decoder.

Torch-free, so engines that never load a model (``openai``) use it without importing torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Distribution:
    """Exact distribution of the parse verdict of one prompt.

    ``mass`` has one key per letter of the protocol (in its order) and ``invalid``: build it with
    :meth:`over`.
    """

    mass: dict[str, float] = field(default_factory=lambda: {"invalid": 0.0})
    undecided: float = 0.0
    best: dict[str, tuple[float, str]] = field(default_factory=dict)  # verdict -> (p, text)

    @classmethod
    def over(cls, letters: Sequence[str]) -> Distribution:
        """An empty distribution over the protocol's ``letters`` and ``invalid``."""
        return cls(mass={**{x: 0.0 for x in letters}, "invalid": 0.0})

    def add(self, verdict: str, p: float, text: str) -> None:
        """Add mass ``p`` of a branch decided as ``verdict`` (its text kept if the likeliest)."""
        self.mass[verdict] += p
        if verdict not in self.best or p > self.best[verdict][0]:
            self.best[verdict] = (p, text)

    def normalised(self) -> tuple[dict[str, float], float]:
        """Masses and undecided rescaled to sum exactly to 1 (removes float drift)."""
        total = sum(self.mass.values()) + self.undecided
        if total <= 0:
            return {k: 0.0 for k in self.mass}, 1.0
        return {k: v / total for k, v in self.mass.items()}, self.undecided / total
