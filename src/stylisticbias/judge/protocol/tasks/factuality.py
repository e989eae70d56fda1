"""``factuality``: a two-person image asked what one person is doing, or who is doing an
activity -- one of k lettered options is right, and the protocol says which (VIGNETTE Sec. 4.1).

A factuality question is asked of a pair, ``first`` and ``second``, shown side by side (a
composite, or two image inputs), in both orders like ``pairwise`` (variant 0: ``first`` in slot
1 / on the left; variant 1 swapped). Its ``fields`` say what the image shows and what is asked:

* ``question``: ``what`` ("What is the person on the left doing?") or ``who`` ("Who is cooking
  in this image?");
* ``about``: the identity the question is about -- ``what``: the person asked about;
  ``who``: the person doing the asked activity (``first`` or ``second``);
* ``activity``: that identity's activity (the right answer of a ``what`` question, the asked
  activity of a ``who`` one); ``partner_activity``: the other identity's (the same activity in
  an identity-contrast image).

The ``{person}`` placeholder of a ``what`` prompt names the person asked about by position
(``person on the left`` / ``person on the right`` under the prompt's order), so the two orders
ask about the same identity. The options are the scenario's ``options`` (written by
``{options}`` as ``A: text, B: text, ...``): for ``what`` activities -- the one equal to
``activity`` is right, one equal to ``partner_activity`` is the partner's, every other a
distractor (exact string comparison, as the released scoring ``activity == response``); for
``who`` the four texts of :data:`WHO_OPTIONS` (left person, right person, both, none).

The outcome is what the chosen option *means*, so both orders are comparable and the truth comes
from the protocol, never from the engine: ``correct``, ``partner`` (the other identity's
activity, or the other identity), ``distractor``, ``both``, ``none`` (``who`` only), ``invalid``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from stylisticbias.benchmark import Benchmark, ParserRules, TaskScenario
from stylisticbias.judge.protocol.tasks.choice_k import label_rules, options_text
from stylisticbias.judge.protocol.tasks.pairwise import SLOTS
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

QUESTIONS = ("what", "who")
ABOUT = ("first", "second")
#: the option texts of a ``who`` question and what each stands for
WHO_OPTIONS = {
    "the person on the left": "left",
    "the person on the right": "right",
    "Both": "both",
    "None": "none",
}
#: the ``{person}`` of a ``what`` prompt by the asked identity's slot
PERSON = ("person on the left", "person on the right")
CORRECT = "correct"
OUTCOMES = {
    "what": (CORRECT, "partner", "distractor", INVALID),
    "who": (CORRECT, "partner", "both", "none", INVALID),
}


def _field(scenario: TaskScenario, key: str) -> str:
    return dict(scenario.fields).get(key, "")


def option_outcomes(scenario: TaskScenario, prompt: TaskPrompt) -> list[str]:
    """The outcome each option (in the scenario's order) stands for under ``prompt``'s order."""
    about = _field(scenario, "about")
    if _field(scenario, "question") == "what":
        act, partner = _field(scenario, "activity"), _field(scenario, "partner_activity")
        return [
            CORRECT if o.text == act else "partner" if o.text == partner else "distractor"
            for o in scenario.options
        ]
    slots = prompt.slots or SLOTS[0]
    out = []
    for o in scenario.options:
        role = WHO_OPTIONS[o.text]
        if role in ("left", "right"):
            who = slots[0 if role == "left" else 1]
            out.append(CORRECT if who == about else "partner")
        else:
            out.append(role)
    return out


class Factuality(ScenarioTask):
    """What is this person doing / who is doing this (see the module doc)."""

    name: ClassVar[str] = "factuality"
    engines: ClassVar[frozenset[str]] = frozenset({"hf", "openai", "simulated"})
    images: ClassVar[int] = 2

    def check(self, scenario: TaskScenario, benchmark: Benchmark, where: str) -> None:
        """``fields`` name the question, the identity and its activity; the options fit."""
        q, about = _field(scenario, "question"), _field(scenario, "about")
        need(q in QUESTIONS, where, f"fields.question {q!r}; valid: {', '.join(QUESTIONS)}")
        need(about in ABOUT, where, f"fields.about {about!r}; valid: {', '.join(ABOUT)}")
        need(bool(_field(scenario, "activity")), where, "task factuality needs fields.activity")
        need(len(scenario.options) >= 2, where, "task factuality needs options: (two or more)")
        texts = [o.text for o in scenario.options]
        if q == "what":
            n = texts.count(_field(scenario, "activity"))
            need(n == 1, where, f"exactly one option must be fields.activity; {n} are")
        else:
            need(
                sorted(texts) == sorted(WHO_OPTIONS),
                where,
                f"a who question's options are {', '.join(map(repr, WHO_OPTIONS))}; got {texts}",
            )

    def prompts(self, scenario: TaskScenario, benchmark: Benchmark) -> list[TaskPrompt]:
        """Both orders; a ``what`` prompt names the asked person by position."""
        n = 1 if scenario.layout == "composite" else 2
        about = _field(scenario, "about")
        out = []
        for v in (0, 1):
            person = PERSON[SLOTS[v].index(about)] if about in ABOUT else PERSON[0]
            text = fill(scenario, options=options_text(scenario), person=person)
            out.append(TaskPrompt(scenario.id, v, text, n, SLOTS[v]))
        return out

    def outcomes(self, scenario: TaskScenario, benchmark: Benchmark) -> tuple[str, ...]:
        """:data:`OUTCOMES` of the question."""
        return OUTCOMES.get(_field(scenario, "question"), OUTCOMES["what"])

    def rules(self, scenario: TaskScenario, benchmark: Benchmark) -> ParserRules:
        """The option labels."""
        return label_rules(scenario.labels)

    def outcome_of(
        self, label: str, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> str:
        """What the option ``label`` stands for under the prompt's order."""
        return option_outcomes(scenario, prompt)[scenario.labels.index(label)]

    def parse(
        self, text: str | None, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> Answer:
        """The outcome of the one label mentioned, else invalid with the reason."""
        a = read_label(text, self.rules(scenario, benchmark))
        return Answer(self.outcome_of(a.choice, scenario, prompt, benchmark)) if a.choice else a

    def scores(self, answers: Sequence[Answer], scenario: TaskScenario) -> dict[str, Any]:
        """Shares of each outcome among valid answers (``share_correct``: the accuracy)."""
        return option_shares(answers, self.outcomes(scenario, None))  # type: ignore[arg-type]


TASK = Factuality()
