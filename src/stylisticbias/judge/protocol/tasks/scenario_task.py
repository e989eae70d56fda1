"""The scenario-level task-type interface: what one kind of question of a ``tasks:`` entry
needs, from the protocol to the scores.

A *scenario task type* (``binary_choice``, ``choice_k``, ``pairwise``, ``numeric``,
``text_only``) is one module of this package holding its prompt builder, its parser (a response
-> an :class:`Answer`, with the reason when it is invalid), its outcome space, the parser rules
an exact decoder expands over, and its per-cell scores. The registry (:mod:`.registry`,
``SCENARIO_TASKS``) maps the ``task:`` name of a ``tasks:`` entry to its type and says which
engines can judge it; the protocol-level task type of the stage (:mod:`.base`) is registered
beside it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from stylisticbias.benchmark import Benchmark, ParserRules, TaskScenario
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.parsing import explain_invalid, parse_response

#: The verdict of an answer that maps to no outcome of its task.
INVALID = "invalid"


@dataclass(frozen=True)
class Answer:
    """One parsed response: the outcome chosen (or None), its number, why it is invalid.

    ``choice``: an outcome of the task's space (``positive``/``negative``; an option label;
    ``first``/``second`` for a pairwise identity) or None; ``value``: the number (``numeric``)
    or the chosen option's value (ordinal ``choice_k``); ``reason``: None for a valid answer,
    else one line saying why it is invalid.
    """

    choice: str | None
    value: float | None = None
    reason: str | None = None

    @property
    def valid(self) -> bool:
        """Whether the answer maps to an outcome of its task."""
        return self.reason is None

    @property
    def outcome(self) -> str:
        """The chosen outcome, or ``invalid``."""
        return self.choice if self.valid and self.choice is not None else INVALID

    @classmethod
    def invalid(cls, reason: str) -> Answer:
        """An invalid answer with its reason."""
        return cls(None, None, reason)


@dataclass(frozen=True)
class TaskPrompt:
    """One prompt of a task scenario: its variant, its text and the images it carries.

    ``variant``: the ordering id for ``binary_choice``; 0 (as listed) or 1 (swapped) for
    ``pairwise``; 0 otherwise. ``images``: how many images the prompt carries (0 for a
    text-only ablation). ``slots``: for a pairwise prompt, which identity (``first`` or
    ``second`` of the pair) each image slot (label 1, label 2; left, right in a composite)
    shows.
    """

    scenario_id: int
    variant: int
    text: str
    images: int = 1
    slots: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[int, int]:
        """``(scenario_id, variant)``."""
        return (self.scenario_id, self.variant)


class ScenarioTask(ABC):
    """One kind of question. Subclasses are stateless; the registry holds one instance each."""

    #: the ``task:`` name in a protocol file
    name: ClassVar[str]
    #: the engines that can judge it (``engine.name`` of a model file)
    engines: ClassVar[frozenset[str]]
    #: images per prompt (``pairwise`` 2, ``text_only`` 0)
    images: ClassVar[int] = 1

    def check(self, scenario: TaskScenario, benchmark: Benchmark, where: str) -> None:  # noqa: B027
        """Raise a one-line :class:`StylisticBiasError` if ``scenario`` lacks what the task
        reads (``where`` names the file and scenario). The default checks nothing."""

    @abstractmethod
    def prompts(self, scenario: TaskScenario, benchmark: Benchmark) -> list[TaskPrompt]:
        """Every prompt the scenario is asked as (one per variant)."""

    @abstractmethod
    def outcomes(self, scenario: TaskScenario, benchmark: Benchmark) -> tuple[str, ...]:
        """The outcome space, ``invalid`` last."""

    @abstractmethod
    def parse(
        self, text: str | None, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> Answer:
        """The answer a finished response gives to ``prompt``."""

    def rules(self, scenario: TaskScenario, benchmark: Benchmark) -> ParserRules | None:
        """The labels an exact decoder expands the response tree over (the verdicts of
        :func:`~stylisticbias.judge.protocol.parsing.decide_prefix`); None: the task has no
        exact distribution (a free number)."""
        return None

    def outcome_of(
        self, label: str, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> str:
        """The outcome a parsed label stands for in ``prompt`` (default: the label itself)."""
        return label

    def distribution(
        self,
        mass: Mapping[str, float],
        scenario: TaskScenario,
        prompt: TaskPrompt,
        benchmark: Benchmark,
    ) -> dict[str, float]:
        """A decoder's label masses (one per label of :meth:`rules` and ``invalid``) as masses
        over :meth:`outcomes`, in that order."""
        out = {o: 0.0 for o in self.outcomes(scenario, benchmark)}
        for label, p in mass.items():
            key = (
                INVALID if label == INVALID else self.outcome_of(label, scenario, prompt, benchmark)
            )
            out[key] += float(p)
        return out

    @abstractmethod
    def scores(self, answers: Sequence[Answer], scenario: TaskScenario) -> dict[str, Any]:
        """The per-cell summary of a cell's answers (e.g. the share of each option)."""


def option_shares(answers: Sequence[Answer], outcomes: Sequence[str]) -> dict[str, Any]:
    """``n``, ``n_valid``, ``invalid_rate`` and the share of each valid outcome among the valid
    answers (NaN when none is valid): the summary every choice task shares."""
    valid = [a.choice for a in answers if a.valid]
    n = len(answers)
    out: dict[str, Any] = {
        "n": n,
        "n_valid": len(valid),
        "invalid_rate": (n - len(valid)) / n if n else float("nan"),
    }
    for o in outcomes:
        if o != INVALID:
            out[f"share_{o}"] = valid.count(o) / len(valid) if valid else float("nan")
    return out


def need(condition: bool, where: str, message: str) -> None:
    """Raise ``where: message`` unless ``condition``."""
    if not condition:
        raise StylisticBiasError(f"{where}: {message}")


class _Fields(dict[str, str]):
    """Placeholder values; a placeholder the task does not fill is a one-line error."""

    def __init__(self, scenario: TaskScenario, values: Mapping[str, str]) -> None:
        super().__init__(values)
        self.scenario = scenario

    def __missing__(self, key: str) -> str:
        raise StylisticBiasError(
            f"task {self.scenario.id} ({self.scenario.task}): the prompt's placeholder {{{key}}} "
            f"is not filled by this task; valid: {', '.join(sorted(self))}"
        )


def fill(scenario: TaskScenario, **extra: str) -> str:
    """The scenario's prompt with its ``fields`` and ``extra`` placeholders filled; a
    placeholder neither fills is a one-line error."""
    return scenario.prompt.format_map(_Fields(scenario, {**dict(scenario.fields), **extra}))


def read_label(text: str | None, rules: ParserRules) -> Answer:
    """The one label of ``rules`` a response mentions (App. C.2's reader over any labels) as
    the answer's ``choice``, else invalid with the reason."""
    label = parse_response(text, rules)
    if label is None:
        return Answer.invalid(explain_invalid(text, rules))
    return Answer(label)
