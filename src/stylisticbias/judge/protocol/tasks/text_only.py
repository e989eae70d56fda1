"""``text_only``: any task asked with its image replaced by a text description (VIGNETTE's
ablation, Sec. 4.5).

The scenario names the task it is answered as (``answers: choice_k``, ...); prompts, parser,
outcomes and scores are that task's, the prompts carry no image and their ``{description}``
placeholder is filled per image with its description (:func:`with_description`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from stylisticbias.benchmark import Benchmark, ParserRules, TaskScenario
from stylisticbias.judge.protocol.tasks.scenario_task import Answer, ScenarioTask, TaskPrompt, need

PLACEHOLDER = "{description}"


def with_description(prompt: TaskPrompt, description: str) -> TaskPrompt:
    """``prompt`` with its image's text description written in."""
    return dataclasses.replace(prompt, text=prompt.text.replace(PLACEHOLDER, description))


class TextOnly(ScenarioTask):
    """A wrapper: the task named by ``answers``, without images."""

    name: ClassVar[str] = "text_only"
    engines: ClassVar[frozenset[str]] = frozenset({"hf", "openai", "simulated"})
    images: ClassVar[int] = 0

    def __init__(self, lookup: Callable[[str, str], ScenarioTask]) -> None:
        self._lookup = lookup

    def inner(self, scenario: TaskScenario) -> ScenarioTask:
        """The task the scenario is answered as."""
        return self._lookup(scenario.answers, f"task {scenario.id}: answers")

    def _as_inner(self, scenario: TaskScenario) -> TaskScenario:
        fields = (*scenario.fields, ("description", PLACEHOLDER))
        return dataclasses.replace(scenario, task=scenario.answers, fields=fields)

    def check(self, scenario: TaskScenario, benchmark: Benchmark, where: str) -> None:
        """``answers`` names another task (not text_only) and the prompt has
        ``{description}``; that task's own checks."""
        need(
            bool(scenario.answers) and scenario.answers != self.name,
            where,
            "task text_only needs answers: <the task it is answered as>",
        )
        need(
            PLACEHOLDER in scenario.prompt,
            where,
            "task text_only needs {description} in its prompt",
        )
        self.inner(scenario).check(self._as_inner(scenario), benchmark, where)

    def prompts(self, scenario: TaskScenario, benchmark: Benchmark) -> list[TaskPrompt]:
        """The inner task's prompts with no image (``{description}`` left to fill)."""
        inner = self.inner(scenario).prompts(self._as_inner(scenario), benchmark)
        return [dataclasses.replace(p, images=0) for p in inner]

    def outcomes(self, scenario: TaskScenario, benchmark: Benchmark) -> tuple[str, ...]:
        """The inner task's."""
        return self.inner(scenario).outcomes(self._as_inner(scenario), benchmark)

    def rules(self, scenario: TaskScenario, benchmark: Benchmark) -> ParserRules | None:
        """The inner task's."""
        return self.inner(scenario).rules(self._as_inner(scenario), benchmark)

    def outcome_of(
        self, label: str, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> str:
        """The inner task's."""
        return self.inner(scenario).outcome_of(label, self._as_inner(scenario), prompt, benchmark)

    def distribution(
        self,
        mass: Mapping[str, float],
        scenario: TaskScenario,
        prompt: TaskPrompt,
        benchmark: Benchmark,
    ) -> dict[str, float]:
        """The inner task's."""
        return self.inner(scenario).distribution(mass, self._as_inner(scenario), prompt, benchmark)

    def parse(
        self, text: str | None, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> Answer:
        """The inner task's."""
        return self.inner(scenario).parse(text, self._as_inner(scenario), prompt, benchmark)

    def scores(self, answers: Sequence[Answer], scenario: TaskScenario) -> dict[str, Any]:
        """The inner task's."""
        return self.inner(scenario).scores(answers, self._as_inner(scenario))
