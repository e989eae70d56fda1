"""The protocol spec's types: scenarios, orderings, letters, parser rules, variation values
and the :class:`Benchmark` that holds them (frozen; built by :mod:`.parse`, loaded by
:mod:`.load`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from stylisticbias.benchmark.released import ReleasedSpec
from stylisticbias.benchmark.sections import (
    LicenceSpec,
    StatisticsSpec,
    StereotypeTarget,
    apply_case,
)
from stylisticbias.errors import StylisticBiasError

DEMOGRAPHIC_AXES: tuple[str, ...] = ("age", "gender", "ethnicity", "body_type")
Pole = Literal["positive", "negative"]
#: An option label (one lower-case character of the protocol's ``letters``, e.g. ``a``).
Letter = str
POLES: tuple[Pole, Pole] = ("positive", "negative")


#: the task type of a protocol that names none (judge/protocol/tasks/registry.py lists them)
DEFAULT_TASK = "binary_choice"


def slug(text: str) -> str:
    """Lower-case ASCII slug for ids and file names (``"Smart casual"`` -> ``smart-casual``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class Scenario:
    """One binary scenario of Table 1; ``positive`` is the pole phi counts.

    Optional annotations (:mod:`stylisticbias.benchmark.sections`): ``subcategory``, ``tags``
    (e.g. ``halo``) and ``stereotype`` (the demographic group each pole is stereotyped towards).
    """

    id: int
    category: str
    positive: str
    negative: str
    subcategory: str = ""
    tags: tuple[str, ...] = ()
    stereotype: StereotypeTarget | None = None

    def pole(self, which: Pole) -> str:
        """The descriptor of one pole."""
        return self.positive if which == "positive" else self.negative


@dataclass(frozen=True)
class ChoiceOption:
    """One labelled option of a ``choice_k`` task: its label (one lower-case letter or digit,
    shown as the prompt writes it), its text and, for an ordinal task, its numeric value."""

    label: str
    text: str
    value: float | None = None


@dataclass(frozen=True)
class NumericRange:
    """The plausible range of a ``numeric`` task's answer and how a written range is read.

    ``ranges``: ``midpoint`` reads "between 50,000 and 60,000" as 55,000; ``invalid`` records
    it as invalid. ``unit``: what the number counts (``USD``), for reports.
    """

    low: float
    high: float
    unit: str = ""
    ranges: str = "midpoint"


@dataclass(frozen=True)
class TaskScenario:
    """One scenario of a protocol's ``tasks:`` list: a question asked as one task type.

    ``task`` names a scenario task type (``judge/protocol/tasks/registry.py``:
    ``binary_choice``, ``choice_k``, ``pairwise``, ``numeric``, ``text_only``); the fields that type
    reads are checked by it (``check_protocol_tasks``). ``prompt`` is the question's template;
    ``options`` the labelled options (``choice_k``; ``pairwise``: the two labels);
    ``ordinal`` whether the options' values are ordered; ``range`` a numeric task's plausible
    range; ``layout`` how a pairwise task shows its two images (``two_images`` or
    ``composite``); ``answers`` the task a ``text_only`` question is answered as (its image
    replaced by ``{description}`` in the prompt); ``positive``/``negative`` the poles of a
    ``binary_choice`` one; ``fields`` the prompt's other placeholders and their values (occupation,
    biography ...); ``system`` the system message sent before the question (a system turn where
    the engine's chat format has one; empty: none).
    """

    id: int
    category: str
    task: str
    prompt: str
    options: tuple[ChoiceOption, ...] = ()
    ordinal: bool = False
    range: NumericRange | None = None
    layout: str = "two_images"
    answers: str = ""
    positive: str = ""
    negative: str = ""
    fields: tuple[tuple[str, str], ...] = ()
    system: str = ""

    @property
    def labels(self) -> tuple[str, ...]:
        """The option labels in the protocol's order."""
        return tuple(o.label for o in self.options)

    def option(self, label: str) -> ChoiceOption:
        """The option a label stands for; unknown labels name the valid ones."""
        for o in self.options:
            if o.label == label:
                return o
        raise StylisticBiasError(
            f"task {self.id}: option {label!r} is not one of {', '.join(self.labels)}"
        )


@dataclass(frozen=True)
class ParserRules:
    """The parts of the response parser that depend on the protocol (``parser:`` section).

    ``letters``: the option labels in the protocol's order (the first is the one letter bias
    counts). ``word_letters``: labels that are also words of the prompt's language (English
    ``a``), so a mid-sentence one is not confirmed by the end of the text alone.
    """

    letters: tuple[Letter, ...]
    word_letters: tuple[Letter, ...] = ()


@dataclass(frozen=True)
class Ordering:
    """One order/label variant of App. C.2: ``slots`` = ((letter, pole), (letter, pole)).

    ``answer``: the order of the letters in the prompt's answer instruction (``{answer_1}``,
    ``{answer_2}``), e.g. ``(b, a)`` for "Respond only with (b) or (a)"; empty: the protocol's
    letter order.
    """

    id: int
    slots: tuple[tuple[Letter, Pole], tuple[Letter, Pole]]
    letters: tuple[Letter, ...]  # the protocol's letters, in its order
    answer: tuple[Letter, ...] = ()

    @property
    def answer_letters(self) -> tuple[Letter, ...]:
        """The letters in the order the answer instruction names them."""
        return self.answer or self.letters

    def pole_of(self, letter: str) -> Pole:
        """Which pole a letter stands for under this ordering."""
        for slot_letter, pole in self.slots:
            if slot_letter == letter:
                return pole
        valid = ", ".join(f"({x})" for x in self.letters)
        raise StylisticBiasError(f"ordering {self.id}: letter {letter!r} is not one of {valid}")

    def letter_of(self, pole: Pole) -> Letter:
        """The letter a pole carries under this ordering."""
        return next(letter for letter, p in self.slots if p == pole)

    @property
    def positive_letter(self) -> Letter:
        """The letter the positive pole carries under this ordering."""
        return self.letter_of("positive")

    @property
    def positive_is_first_letter(self) -> bool:
        """Whether the positive pole carries the protocol's first letter (letter bias)."""
        return self.positive_letter == self.letters[0]

    @property
    def positive_position(self) -> int:
        """1 if the positive pole is written first, else 2."""
        return 1 if self.slots[0][1] == "positive" else 2


@dataclass(frozen=True)
class VariationValue:
    """One of the 55 variation values of Table 10."""

    attribute: str  # Table 10 row, e.g. "Hair color"
    key: str  # feature key of the Fig. 10 prompt, e.g. "hair_color"
    category: str  # grouping of Table 3, e.g. "Hair len./color"
    value: str  # e.g. "Blonde"
    prompt: str  # feature value of the Fig. 10/11 prompt, e.g. "blonde"
    label: str  # spelling of Table 12, e.g. "Prof./Business"
    gender_scope: str  # all | male | female
    framing: str  # face | full_body
    evaluated: bool  # in the 34-value judgment whitelist
    exclude_gender: tuple[str, ...] = ()  # plausibility pass (dataset)
    table12_category: str = ""  # Table 12 spelling of the attribute, e.g. "Skin" (analysis tables)

    @property
    def slug(self) -> str:
        """``<attribute>--<value>`` slug, unique across the grid."""
        return f"{slug(self.attribute)}--{slug(self.value)}"

    def applies_to(self, gender: str) -> bool:
        """Whether this value is in the dataset for a face of ``gender`` (scope + plausibility)."""
        if self.gender_scope != "all" and self.gender_scope != gender:
            return False
        return gender not in self.exclude_gender


def select_ids(kind: str, raw: Any, valid_ids: Sequence[int]) -> list[int]:
    """A ``judge.<kind>`` selection resolved against the protocol's ids: ``all`` or None is
    every id (file order), else a non-empty list of known ids (one-line errors otherwise)."""
    valid = [int(i) for i in valid_ids]
    if raw is None or raw == "all":
        return valid
    where = f"judge.{kind}"
    if isinstance(raw, str | bytes) or not isinstance(raw, Sequence) or not raw:
        raise StylisticBiasError(f"{where}: {raw!r}; valid: all or a list of ids of {valid}")
    out: list[int] = []
    for x in raw:
        try:
            if isinstance(x, bool):
                raise ValueError
            out.append(int(x))
        except (TypeError, ValueError):
            raise StylisticBiasError(f"{where}: {x!r} is not an integer; valid: {valid}") from None
    bad = [x for x in out if x not in valid]
    if bad:
        raise StylisticBiasError(f"{where}: unknown id(s) {bad}; valid: all or {valid}")
    return out


@dataclass(frozen=True)
class Benchmark:
    """The whole protocol (also exported as :data:`Protocol`)."""

    name: str
    demographics: dict[str, tuple[str, ...]]
    observed_marginals: dict[str, Any]
    scenarios: tuple[Scenario, ...]
    orderings: tuple[Ordering, ...]
    variations: tuple[VariationValue, ...]
    prompts: dict[str, str]
    parser: ParserRules
    source: str = ""  # the file it was read from (for messages)
    #: ``family:`` (stylisticbias.family.FAMILY_NAMES): which family's stages measure it
    family: str = "variation_shift"
    #: ``paradigm:``: which of its family's paradigms it is (the tasks family: reflect,
    #: vignette; stylisticbias.families.tasks); empty for a family without paradigms
    paradigm: str = ""
    digest: str = ""  # sha256 of the file's text (cache keys)
    task: str = DEFAULT_TASK  # the task type (``task:``; judge/protocol/tasks/registry.py)
    tasks: tuple[TaskScenario, ...] = ()  # the ``tasks:`` list (task-typed scenarios)
    option_case: str = "as_written"  # how poles are written into the forced-choice prompt
    seeds: tuple[int, ...] = ()  # the seeds the paper judged with (informative)
    statistics: StatisticsSpec = field(default_factory=StatisticsSpec)
    licence: LicenceSpec = field(default_factory=LicenceSpec)
    #: ``counterfactual.axes``: the demographic axes edited within each source photo (REFLECT:
    #: ethnicity, gender); empty: the images are independent identities
    counterfactual: tuple[str, ...] = ()
    #: ``released:``: the paper's released code's spellings (scenario index, poles, values,
    #: prompt, its scenario categories); None: the identity (:mod:`.released`)
    released: ReleasedSpec | None = None

    # ---- lookups -------------------------------------------------------------------------
    @property
    def letters(self) -> tuple[Letter, ...]:
        """The option labels, in the protocol's order."""
        return self.parser.letters

    @property
    def ordering_ids(self) -> list[int]:
        """Ids of every ordering, in file order."""
        return [o.id for o in self.orderings]

    @property
    def scenario_ids(self) -> list[int]:
        """Ids of every scenario, in file order."""
        return [s.id for s in self.scenarios]

    def selected_orderings(self, raw: Any) -> list[int]:
        """``judge.orderings`` (``all`` or a list of ids) resolved against this protocol."""
        return select_ids("orderings", raw, self.ordering_ids)

    def scenario(self, scenario_id: int) -> Scenario:
        """Scenario by id; unknown ids name the valid range."""
        for s in self.scenarios:
            if s.id == scenario_id:
                return s
        valid = ", ".join(str(s.id) for s in self.scenarios)
        raise StylisticBiasError(f"unknown scenario_id {scenario_id!r}; valid: {valid}")

    def task_scenario(self, task_id: int) -> TaskScenario:
        """Scenario of the ``tasks:`` list by id; unknown ids name the valid ones."""
        for t in self.tasks:
            if t.id == task_id:
                return t
        valid = ", ".join(str(t.id) for t in self.tasks) or "none (the protocol has no tasks)"
        raise StylisticBiasError(f"unknown task id {task_id!r}; valid: {valid}")

    @property
    def task_names(self) -> tuple[str, ...]:
        """Every task type the protocol asks, in first-use order (the protocol's ``task`` for
        its ``scenarios:`` list, then each ``tasks:`` entry's)."""
        names = [self.task] if self.scenarios else []
        names += [t.task for t in self.tasks]
        return tuple(dict.fromkeys(names))

    def ordering(self, ordering_id: int) -> Ordering:
        """Ordering by id."""
        for o in self.orderings:
            if o.id == ordering_id:
                return o
        valid = ", ".join(str(o.id) for o in self.orderings)
        raise StylisticBiasError(f"unknown ordering {ordering_id!r}; valid: {valid}")

    def variation(self, attribute: str, value: str) -> VariationValue:
        """Variation by (attribute, value); unknown pairs list the valid values."""
        for v in self.variations:
            if v.attribute == attribute and v.value == value:
                return v
        attrs = sorted({v.attribute for v in self.variations})
        if attribute not in attrs:
            raise StylisticBiasError(f"unknown attribute {attribute!r}; valid: {', '.join(attrs)}")
        vals = [v.value for v in self.variations if v.attribute == attribute]
        raise StylisticBiasError(
            f"unknown value {value!r} for attribute {attribute!r}; valid: {', '.join(vals)}"
        )

    def variations_for(self, gender: str, *, evaluated_only: bool = False) -> list[VariationValue]:
        """The variation values a face of ``gender`` gets (full grid or whitelist)."""
        return [
            v
            for v in self.variations
            if v.applies_to(gender) and (v.evaluated or not evaluated_only)
        ]

    @property
    def categories(self) -> list[str]:
        """Table 3 categories in configuration order."""
        return list(dict.fromkeys(v.category for v in self.variations))

    @property
    def attributes(self) -> list[str]:
        """Table 10 attributes in configuration order."""
        return list(dict.fromkeys(v.attribute for v in self.variations))

    @property
    def scenario_categories(self) -> list[str]:
        """Table 1 scenario categories in configuration order."""
        return list(dict.fromkeys(s.category for s in self.scenarios))

    # ---- prompts -------------------------------------------------------------------------
    def base_face_prompt(self, *, age: str, gender: str, ethnicity: str, body_type: str) -> str:
        """Fig. 9 filled for one demographic cell."""
        return self.prompts["base_face"].format(
            age=age, gender=gender, ethnicity=ethnicity, body_type=body_type
        )

    def variation_prompt(self, variation: VariationValue, *, gender: str) -> str:
        """Fig. 10 (face edits) or Fig. 11 (full-body fashion) filled for one edit."""
        if variation.framing == "full_body":
            return self.prompts["fashion_variation"].format(
                gender=gender, fashion_style=variation.prompt
            )
        return self.prompts["feature_variation"].format(
            gender=gender, feature_key=variation.key, feature_value=variation.prompt
        )

    def forced_choice_prompt(self, scenario: Scenario, ordering: Ordering) -> str:
        """Fig. 12 with the two slots filled per the ordering (ordering 1 = Fig. 12 verbatim)."""
        (l1, p1), (l2, p2) = ordering.slots
        answer = ordering.answer_letters
        return self.prompts["forced_choice"].format(
            letter_1=l1,
            option_1=apply_case(scenario.pole(p1), self.option_case),
            letter_2=l2,
            option_2=apply_case(scenario.pole(p2), self.option_case),
            answer_1=answer[0],
            answer_2=answer[1],
        )

    def options_shown(self, scenario: Scenario, ordering: Ordering) -> tuple[str, ...]:
        """The pole text each letter stands for under ``ordering``, in the protocol's letter
        order (``(text of (a), text of (b))`` for the paper)."""
        return tuple(
            apply_case(scenario.pole(ordering.pole_of(letter)), self.option_case)
            for letter in self.letters
        )


#: The protocol spec's public name (the class keeps its historical name for imports).
Protocol = Benchmark
