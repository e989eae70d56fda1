"""``pairwise``: two images in one prompt (REFLECT's 2AFC, VIGNETTE's two people side by side),
asked in both orders.

A pair is two identities, ``first`` and ``second`` (two counterfactual edits of one source
photo, or two people). Variant 0 shows ``first`` in slot 1 (label 1; the left half of a
composite) and ``second`` in slot 2; variant 1 swaps them -- the paper's swap. The protocol's
``layout`` says how the two are shown: ``two_images`` (two image inputs, label 1's first) or
``composite`` (one side-by-side image; :attr:`TaskPrompt.slots` records which identity is
left). The labels are the scenario's two ``options`` (default A and B). The parser is the
forced-choice parser over the two labels; the outcome is the *identity* chosen, so the two
orders of one pair are comparable. :func:`swap_check` is the swap-consistency rule: a pair
whose two orders disagree is inconsistent and is dropped from win rates (REFLECT Sec. 3.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from stylisticbias.benchmark import Benchmark, ParserRules, TaskScenario
from stylisticbias.judge.protocol.tasks.choice_k import label_rules
from stylisticbias.judge.protocol.tasks.composites import LAYOUT, CompositeLayout, compose
from stylisticbias.judge.protocol.tasks.scenario_task import (
    INVALID,
    Answer,
    ScenarioTask,
    TaskPrompt,
    fill,
    need,
    read_label,
)

IDENTITIES = ("first", "second")
#: The slot order of each variant: 0 as listed, 1 swapped.
SLOTS = {0: ("first", "second"), 1: ("second", "first")}
DEFAULT_LABELS = ("a", "b")


def labels(scenario: TaskScenario) -> tuple[str, str]:
    """The two labels (the scenario's options, else A and B)."""
    got = scenario.labels or DEFAULT_LABELS
    return got[0], got[1]


def swap_check(order0: Answer, order1: Answer) -> str:
    """``consistent`` (both orders chose the same identity), ``inconsistent`` (they differ)
    or ``invalid`` (either order is invalid)."""
    if not (order0.valid and order1.valid):
        return INVALID
    return "consistent" if order0.choice == order1.choice else "inconsistent"


class Pairwise(ScenarioTask):
    """Two identities per prompt, both orders; outcome = the identity chosen."""

    name: ClassVar[str] = "pairwise"
    engines: ClassVar[frozenset[str]] = frozenset({"hf", "openai", "simulated"})
    images: ClassVar[int] = 2

    def check(self, scenario: TaskScenario, benchmark: Benchmark, where: str) -> None:
        """Exactly two labels when options are given."""
        need(
            len(scenario.options) in (0, 2),
            where,
            f"task pairwise takes two options (labels), got {len(scenario.options)}",
        )

    def prompts(self, scenario: TaskScenario, benchmark: Benchmark) -> list[TaskPrompt]:
        """Both orders; a composite is one image with the identities left/right."""
        l1, l2 = labels(scenario)
        text = fill(scenario, label_1=l1.upper(), label_2=l2.upper())
        n = 1 if scenario.layout == "composite" else 2
        return [TaskPrompt(scenario.id, v, text, n, SLOTS[v]) for v in (0, 1)]

    def outcomes(self, scenario: TaskScenario, benchmark: Benchmark) -> tuple[str, ...]:
        """``first``, ``second``, ``invalid``."""
        return (*IDENTITIES, INVALID)

    def rules(self, scenario: TaskScenario, benchmark: Benchmark) -> ParserRules:
        """The two labels."""
        return label_rules(labels(scenario))

    def outcome_of(
        self, label: str, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> str:
        """The identity in the slot ``label`` names under the prompt's order."""
        return SLOTS[prompt.variant][labels(scenario).index(label)]

    def parse(
        self, text: str | None, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> Answer:
        """The identity the one label mentioned stands for, else invalid with the reason."""
        a = read_label(text, self.rules(scenario, benchmark))
        return Answer(self.outcome_of(a.choice, scenario, prompt, benchmark)) if a.choice else a

    def scores(self, answers: Sequence[Answer], scenario: TaskScenario) -> dict[str, Any]:
        """``answers`` as (order 0, order 1) pairs: the number of pairs, the share of valid
        pairs that are inconsistent, and ``first``'s win rate over consistent pairs."""
        if len(answers) % 2:
            raise ValueError("pairwise scores take (order 0, order 1) answer pairs")
        checks = [(swap_check(a, b), a.choice) for a, b in zip(answers[::2], answers[1::2])]
        valid = [c for c in checks if c[0] != INVALID]
        kept = [w for c, w in valid if c == "consistent"]
        return {
            "n_pairs": len(checks),
            "n_valid_pairs": len(valid),
            "inconsistent_rate": (len(valid) - len(kept)) / len(valid) if valid else math.nan,
            "win_rate_first": kept.count("first") / len(kept) if kept else math.nan,
        }


def composite(left: Any, right: Any, layout: CompositeLayout = LAYOUT) -> Any:
    """One side-by-side image: ``left`` and ``right`` (PIL images) in the fixed two-cell layout
    of :mod:`.composites` (VIGNETTE Sec. 1.5's two-person image)."""
    return compose(left, right, layout)


def slot_images(
    prompt: TaskPrompt, first: Any, second: Any, layout: CompositeLayout = LAYOUT
) -> list[Any]:
    """The images a pairwise prompt carries, in slot order: ``[slot 1, slot 2]`` for two image
    inputs, ``[composite(left, right)]`` for a composite (``prompt.slots[0]`` is the identity on
    the left: records keep it)."""
    by_identity = {"first": first, "second": second}
    ordered = [by_identity[x] for x in prompt.slots]
    if prompt.images == 1:
        return [composite(ordered[0], ordered[1], layout)]
    return ordered


def image_count_reason(prompt: TaskPrompt, given: int) -> str | None:
    """Why a prompt given ``given`` images cannot be asked (None when the count fits)."""
    if given == prompt.images:
        return None
    return f"task prompt {prompt.key} needs {prompt.images} image(s), got {given}"


TASK = Pairwise()
