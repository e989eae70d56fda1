"""``choice_k``: k labelled options (REFLECT's salary brackets A-F, education A-D), one prompt.

The options are the scenario's ``options:`` (label, text, optional value); ``ordinal: true``
needs a value on every option, and the scores then add the mean value. The prompt's
``{options}`` placeholder writes them as ``A: text, B: text, ...`` (REFLECT Fig. 9's layout);
a prompt may instead spell them out verbatim. The parser is the forced-choice parser
(:mod:`~stylisticbias.judge.protocol.parsing`) over the k labels: one label mentioned ->
that option; two or more, a hedge, a label outside the options or none -> invalid with the
reason. Exact decoders expand the response tree over the k labels (:meth:`ChoiceK.rules`), so
the distribution covers all k options and ``invalid``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from stylisticbias.benchmark import Benchmark, ParserRules, TaskScenario
from stylisticbias.judge.protocol.tasks.scenario_task import (
    INVALID,
    Answer,
    ScenarioTask,
    TaskPrompt,
    fill,
    need,
    option_shares,
    read_label,
)

#: Labels that are also English words: a mid-sentence one is not an answer by itself.
WORD_LABELS = ("a", "i")


def label_rules(labels: Sequence[str]) -> ParserRules:
    """Parser rules over ``labels`` (English word labels marked as such)."""
    return ParserRules(
        letters=tuple(labels), word_letters=tuple(x for x in labels if x in WORD_LABELS)
    )


def options_text(scenario: TaskScenario) -> str:
    """``A: text, B: text, ...`` (labels upper-cased as REFLECT writes them)."""
    return ", ".join(f"{o.label.upper()}: {o.text}" for o in scenario.options)


class ChoiceK(ScenarioTask):
    """k labelled options, optionally ordinal; outcome = the label chosen."""

    name: ClassVar[str] = "choice_k"
    engines: ClassVar[frozenset[str]] = frozenset({"hf", "openai", "simulated"})

    def check(self, scenario: TaskScenario, benchmark: Benchmark, where: str) -> None:
        """At least two options; every option valued when ordinal."""
        need(len(scenario.options) >= 2, where, "task choice_k needs options: (two or more)")
        if scenario.ordinal:
            missing = [o.label for o in scenario.options if o.value is None]
            need(
                not missing,
                where,
                f"ordinal: true needs a value on every option; none on {missing}",
            )

    def prompts(self, scenario: TaskScenario, benchmark: Benchmark) -> list[TaskPrompt]:
        """One prompt (the options in the protocol's order; REFLECT does not permute them)."""
        return [TaskPrompt(scenario.id, 0, fill(scenario, options=options_text(scenario)))]

    def outcomes(self, scenario: TaskScenario, benchmark: Benchmark) -> tuple[str, ...]:
        """The labels, then ``invalid``."""
        return (*scenario.labels, INVALID)

    def rules(self, scenario: TaskScenario, benchmark: Benchmark) -> ParserRules:
        """The k labels."""
        return label_rules(scenario.labels)

    def parse(
        self, text: str | None, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> Answer:
        """The one label mentioned (with the option's value), else invalid with the reason."""
        a = read_label(text, self.rules(scenario, benchmark))
        return Answer(a.choice, scenario.option(a.choice).value) if a.choice else a

    def scores(self, answers: Sequence[Answer], scenario: TaskScenario) -> dict[str, Any]:
        """Shares of each option among valid answers; ordinal tasks add ``mean_value``."""
        out = option_shares(answers, self.outcomes(scenario, None))  # type: ignore[arg-type]
        if scenario.ordinal:
            vals = [a.value for a in answers if a.valid and a.value is not None]
            out["mean_value"] = sum(vals) / len(vals) if vals else math.nan
        return out


def distribution_mean(dist: dict[str, float], scenario: TaskScenario) -> float:
    """The expected option value of an exact distribution, conditional on a valid answer."""
    valid = {o.label: dist.get(o.label, 0.0) for o in scenario.options}
    total = sum(valid.values())
    if total <= 0 or not scenario.ordinal:
        return math.nan
    return sum(p * float(scenario.option(x).value) for x, p in valid.items()) / total  # type: ignore[arg-type]


TASK = ChoiceK()
