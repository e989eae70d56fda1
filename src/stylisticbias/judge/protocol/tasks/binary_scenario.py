"""``binary_choice`` (scenario level): the forced choice between two poles under the
protocol's orderings (paper Fig. 12), the task of the protocol's ``scenarios:`` list.

The prompts, the parser and the letter -> pole map are the ones the judge stage has always
used (:meth:`Benchmark.forced_choice_prompt`, :func:`parsing.parse_response`,
:meth:`Ordering.pole_of`), so a binary scenario's records are what they were.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from stylisticbias.benchmark import Benchmark, ParserRules, Scenario, TaskScenario
from stylisticbias.judge.protocol.parsing import explain_invalid, parse_response
from stylisticbias.judge.protocol.tasks.scenario_task import (
    INVALID,
    Answer,
    ScenarioTask,
    TaskPrompt,
    need,
    option_shares,
)

POLES = ("positive", "negative")


def as_scenario(scenario: TaskScenario | Scenario) -> Scenario:
    """A ``scenarios:`` entry as it is, a binary ``tasks:`` entry as a :class:`Scenario`."""
    if isinstance(scenario, Scenario):
        return scenario
    return Scenario(scenario.id, scenario.category, scenario.positive, scenario.negative)


class Binary(ScenarioTask):
    """Two poles, two letters, every ordering of the protocol; outcome = the pole chosen."""

    name: ClassVar[str] = "binary_choice"
    engines: ClassVar[frozenset[str]] = frozenset({"hf", "openai", "simulated"})

    def check(self, scenario: TaskScenario, benchmark: Benchmark, where: str) -> None:
        """A binary task needs its two poles."""
        need(
            bool(scenario.positive and scenario.negative),
            where,
            "task binary_choice needs positive: and negative:",
        )

    def prompts(self, scenario: TaskScenario | Scenario, benchmark: Benchmark) -> list[TaskPrompt]:
        """One prompt per ordering of the protocol (Fig. 12 filled per ordering)."""
        s = as_scenario(scenario)
        return [
            TaskPrompt(s.id, o.id, benchmark.forced_choice_prompt(s, o))
            for o in benchmark.orderings
        ]

    def outcomes(self, scenario: TaskScenario | Scenario, benchmark: Benchmark) -> tuple[str, ...]:
        """``positive``, ``negative``, ``invalid``."""
        return (*POLES, INVALID)

    def rules(self, scenario: TaskScenario | Scenario, benchmark: Benchmark) -> ParserRules:
        """The protocol's two letters."""
        return benchmark.parser

    def outcome_of(
        self, label: str, scenario: Any, prompt: TaskPrompt, benchmark: Benchmark
    ) -> str:
        """The pole ``label`` stands for under the prompt's ordering."""
        return benchmark.ordering(prompt.variant).pole_of(label)

    def parse(
        self, text: str | None, scenario: Any, prompt: TaskPrompt, benchmark: Benchmark
    ) -> Answer:
        """App. C.2's reading (``parser: paper``) mapped to the pole of the ordering."""
        letter = parse_response(text, benchmark.parser)
        if letter is None:
            return Answer.invalid(explain_invalid(text, benchmark.parser))
        return Answer(self.outcome_of(letter, scenario, prompt, benchmark))

    def scores(self, answers: Sequence[Answer], scenario: Any) -> dict[str, Any]:
        """Shares of each pole among valid answers; ``phi`` = the positive share."""
        out = option_shares(answers, (*POLES, INVALID))
        out["phi"] = out["share_positive"]
        return out


TASK = Binary()
