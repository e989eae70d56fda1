"""The benchmark protocol: one typed, frozen spec loaded from ``conf/benchmark/<name>.yaml``.

A *protocol* is everything that defines a measurement and that the code must not repeat: the
demographic grid and its observed marginals, the scenarios and their poles, the prompts, the
option letters, the order/label variants (App. C.2's ordering table), the attribute grid and the
parser rules that depend on the letters. ``params.yaml`` holds only the protocol's name
(``protocol: stylisticbias``); the YAML file is a DVC dependency of every stage that reads it.

:func:`load_benchmark` parses a file once (cached by path and content) and checks every key:
an unknown, misspelt or missing key fails in one line naming the file, the key and the valid
keys. :func:`benchmark_from_params` is what stages call. To add a protocol, copy
``conf/benchmark/stylisticbias.yaml`` (or ``tests/data/protocols/mini.yaml``, a small one)
and set ``protocol: <name>`` (docs/protocol.md, "Adding a protocol").
"""

from __future__ import annotations

import functools
import hashlib
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from stylisticbias.errors import StylisticBiasError

DEMOGRAPHIC_AXES: tuple[str, ...] = ("age", "gender", "ethnicity", "body_type")
Pole = Literal["positive", "negative"]
#: An option label (one lower-case character of the protocol's ``letters``, e.g. ``a``).
Letter = str
POLES: tuple[Pole, Pole] = ("positive", "negative")


def slug(text: str) -> str:
    """Lower-case ASCII slug for ids and file names (``"Smart casual"`` -> ``smart-casual``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class Scenario:
    """One binary scenario of Table 1; ``positive`` is the pole phi counts."""

    id: int
    category: str
    positive: str
    negative: str

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

    ``task`` names a task type of the registry (``stylisticbias.judge.protocol.tasks``:
    ``binary``, ``choice_k``, ``pairwise``, ``numeric``, ``text_only``); the fields that type
    reads are checked by it (``check_protocol_tasks``). ``prompt`` is the question's template;
    ``options`` the labelled options (``choice_k``; ``pairwise``: the two labels);
    ``ordinal`` whether the options' values are ordered; ``range`` a numeric task's plausible
    range; ``layout`` how a pairwise task shows its two images (``two_images`` or
    ``composite``); ``answers`` the task a ``text_only`` question is answered as (its image
    replaced by ``{description}`` in the prompt); ``positive``/``negative`` the poles of a
    ``binary`` one; ``fields`` the prompt's other placeholders and their values (occupation,
    biography ...).
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
    """One order/label variant of App. C.2: ``slots`` = ((letter, pole), (letter, pole))."""

    id: int
    slots: tuple[tuple[Letter, Pole], tuple[Letter, Pole]]
    letters: tuple[Letter, ...]  # the protocol's letters, in its order

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
    digest: str = ""  # sha256 of the file's text (cache keys)
    tasks: tuple[TaskScenario, ...] = ()  # the ``tasks:`` list (task-typed scenarios)

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

    def task(self, task_id: int) -> TaskScenario:
        """Task scenario of the ``tasks:`` list by id; unknown ids name the valid ones."""
        for t in self.tasks:
            if t.id == task_id:
                return t
        valid = ", ".join(str(t.id) for t in self.tasks) or "none (the protocol has no tasks)"
        raise StylisticBiasError(f"unknown task id {task_id!r}; valid: {valid}")

    @property
    def task_names(self) -> tuple[str, ...]:
        """Every task type the protocol asks, in first-use order (``binary`` for the
        ``scenarios:`` list)."""
        names = ["binary"] if self.scenarios else []
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
        return self.prompts["forced_choice"].format(
            letter_1=l1,
            option_1=scenario.pole(p1),
            letter_2=l2,
            option_2=scenario.pole(p2),
        )

    def options_shown(self, scenario: Scenario, ordering: Ordering) -> tuple[str, ...]:
        """The pole text each letter stands for under ``ordering``, in the protocol's letter
        order (``(text of (a), text of (b))`` for the paper)."""
        return tuple(scenario.pole(ordering.pole_of(letter)) for letter in self.letters)


#: The protocol spec's public name (the class keeps its historical name for imports).
Protocol = Benchmark

# ---- parsing the YAML -------------------------------------------------------------------------

#: Placeholders each prompt template may use (str.format fields).
PROMPT_FIELDS: dict[str, tuple[str, ...]] = {
    "base_face": ("age", "gender", "ethnicity", "body_type"),
    "feature_variation": ("gender", "feature_key", "feature_value"),
    "fashion_variation": ("gender", "fashion_style"),
    "forced_choice": ("letter_1", "option_1", "letter_2", "option_2", "letters"),
}
_TOP_KEYS = ("name", "demographics", "observed_marginals", "scenarios", "prompts", "letters",
             "parser", "orderings", "attributes", "tasks")  # fmt: skip
_TOP_REQUIRED = ("demographics", "scenarios", "prompts", "letters", "orderings", "attributes")
_SCENARIO_KEYS = ("id", "category", "positive", "negative")
_ORDERING_KEYS = ("id", "slots")
_PARSER_KEYS = ("word_letters",)
_ATTRIBUTE_KEYS = ("name", "table12_category", "key", "category", "gender_scope", "framing",
                   "values")  # fmt: skip
_ATTRIBUTE_REQUIRED = ("name", "key", "category", "values")
_VALUE_KEYS = ("value", "prompt", "label", "evaluated", "exclude_gender")
_FRAMINGS = ("face", "full_body")


def _check_keys(
    node: Any,
    where: str,
    allowed: Sequence[str],
    required: Sequence[str] = (),
) -> Mapping[str, Any]:
    """``node`` as a mapping whose keys are all in ``allowed`` and include ``required``."""
    if not isinstance(node, Mapping):
        raise StylisticBiasError(f"{where}: expected a mapping with keys {', '.join(allowed)}")
    valid = ", ".join(allowed)
    for key in node:
        if key not in allowed:
            raise StylisticBiasError(f"{where}: unknown key {key!r}; valid keys: {valid}")
    for key in required:
        if key not in node:
            raise StylisticBiasError(f"{where}: missing key {key!r}; valid keys: {valid}")
    return node


def _list(node: Any, where: str) -> list[Any]:
    if not isinstance(node, list) or not node:
        raise StylisticBiasError(f"{where}: expected a non-empty list")
    return node


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise StylisticBiasError(f"{where}: {value!r} is not an integer")
    return value


def _template(text: Any, kind: str, where: str) -> str:
    """A prompt template whose str.format fields are all known for its kind."""
    text = str(text)
    valid = PROMPT_FIELDS[kind]
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        raise StylisticBiasError(f"{where}: not a valid template: {exc}") from None
    for f in fields:
        base = re.split(r"[.\[]", f, maxsplit=1)[0]
        if base not in valid:
            raise StylisticBiasError(
                f"{where}: unknown placeholder {{{f}}}; valid: {', '.join(valid)}"
            )
    return text


def _fill_letters(text: str, letters: tuple[str, ...], where: str) -> str:
    """``{letters[0]}``, ``{letters[1]}`` written once into the template (the labels are fixed
    per protocol; the slots' ``{letter_1}``/``{letter_2}`` stay per ordering)."""
    for i, letter in enumerate(letters):
        text = text.replace(f"{{letters[{i}]}}", letter)
    left = [f for _, f, _, _ in string.Formatter().parse(text) if f and f.startswith("letters")]
    if left:
        raise StylisticBiasError(
            f"{where}: placeholder {{{left[0]}}}; valid: "
            + ", ".join(f"{{letters[{i}]}}" for i in range(len(letters)))
        )
    return text


def _parse_orderings(
    cfg: Mapping[str, Any], letters: tuple[str, ...], where: str
) -> tuple[Ordering, ...]:
    orderings: list[Ordering] = []
    for i, o in enumerate(_list(cfg["orderings"], f"{where}: orderings")):
        w = f"{where}: orderings[{i}]"
        o = _check_keys(o, w, _ORDERING_KEYS, _ORDERING_KEYS)
        raw = o["slots"]
        if (
            not isinstance(raw, list)
            or len(raw) != 2
            or any(not isinstance(s, list) or len(s) != 2 for s in raw)
        ):
            raise StylisticBiasError(f"{w}.slots: expected [[letter, pole], [letter, pole]]")
        slots = tuple((str(letter), str(pole)) for letter, pole in raw)
        if sorted(x for x, _ in slots) != sorted(letters) or sorted(p for _, p in slots) != sorted(
            POLES
        ):
            raise StylisticBiasError(
                f"{w}.slots: must use letters {', '.join(letters)} and poles "
                f"{', '.join(POLES)} once each; got {slots}"
            )
        orderings.append(Ordering(_int(o["id"], f"{w}.id"), slots, letters))  # type: ignore[arg-type]
    ids = [o.id for o in orderings]
    if len(set(ids)) != len(ids):
        raise StylisticBiasError(f"{where}: orderings: duplicate ordering ids {ids}")
    return tuple(orderings)


def _parse_letters(cfg: Mapping[str, Any], where: str) -> ParserRules:
    letters = tuple(str(x) for x in _list(cfg["letters"], f"{where}: letters"))
    if len(letters) != 2 or len(set(letters)) != 2:
        raise StylisticBiasError(f"{where}: letters: expected two distinct labels; got {letters}")
    for x in letters:
        if not re.fullmatch(r"[a-z0-9]", x):
            raise StylisticBiasError(
                f"{where}: letters: {x!r} is not one lower-case letter or digit"
            )
    parser = _check_keys(cfg.get("parser") or {}, f"{where}: parser", _PARSER_KEYS)
    words = tuple(str(x) for x in parser.get("word_letters") or ())
    for x in words:
        if x not in letters:
            raise StylisticBiasError(
                f"{where}: parser.word_letters: {x!r}; valid: {', '.join(letters)}"
            )
    return ParserRules(letters=letters, word_letters=words)


def _parse_variations(
    cfg: Mapping[str, Any], genders: tuple[str, ...], where: str
) -> tuple[VariationValue, ...]:
    variations: list[VariationValue] = []
    for i, a in enumerate(_list(cfg["attributes"], f"{where}: attributes")):
        wa = f"{where}: attributes[{i}]"
        a = _check_keys(a, wa, _ATTRIBUTE_KEYS, _ATTRIBUTE_REQUIRED)
        wa = f"{where}: attributes[{a['name']}]"
        scope = str(a.get("gender_scope", "all"))
        if scope not in ("all", *genders):
            raise StylisticBiasError(
                f"{wa}.gender_scope: {scope!r}; valid: all, " + ", ".join(genders)
            )
        framing = str(a.get("framing", "face"))
        if framing not in _FRAMINGS:
            raise StylisticBiasError(f"{wa}.framing: {framing!r}; valid: {', '.join(_FRAMINGS)}")
        for j, v in enumerate(_list(a["values"], f"{wa}.values")):
            v = _check_keys(v, f"{wa}.values[{j}]", _VALUE_KEYS, ("value",))
            excl = tuple(str(g) for g in v.get("exclude_gender", ()) or ())
            for g in excl:
                if g not in genders:
                    raise StylisticBiasError(
                        f"{wa}.values[{j}].exclude_gender: {g!r}; valid: {', '.join(genders)}"
                    )
            variations.append(
                VariationValue(
                    attribute=str(a["name"]),
                    key=str(a["key"]),
                    category=str(a["category"]),
                    value=str(v["value"]),
                    prompt=str(v.get("prompt", str(v["value"]).lower())),
                    label=str(v.get("label", v["value"])),
                    gender_scope=scope,
                    framing=framing,
                    evaluated=bool(v.get("evaluated", True)),
                    exclude_gender=excl,
                    table12_category=str(a.get("table12_category", a["name"])),
                )
            )
    slugs = [v.slug for v in variations]
    dup = {s for s in slugs if slugs.count(s) > 1}
    if dup:
        raise StylisticBiasError(f"{where}: attributes: duplicate variation values {sorted(dup)}")
    return tuple(variations)


_TASK_KEYS = ("id", "category", "task", "prompt", "options", "ordinal", "range", "layout",
              "answers", "positive", "negative", "fields")  # fmt: skip
_OPTION_KEYS = ("label", "text", "value")
_RANGE_KEYS = ("low", "high", "unit", "ranges")
#: How a numeric task reads a written range ("50-60k"): its midpoint, or invalid.
RANGE_RULES = ("midpoint", "invalid")
#: How a pairwise task shows its two images: two image inputs, or one side-by-side composite.
LAYOUTS = ("two_images", "composite")
#: Placeholders every task prompt may use besides its own ``fields``.
TASK_PROMPT_FIELDS = ("options", "description", "label_1", "label_2")


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StylisticBiasError(f"{where}: {value!r} is not a number")
    return float(value)


def _parse_options(node: Any, where: str) -> tuple[ChoiceOption, ...]:
    out: list[ChoiceOption] = []
    for j, o in enumerate(_list(node, where)):
        w = f"{where}[{j}]"
        o = _check_keys(o, w, _OPTION_KEYS, ("label", "text"))
        label = str(o["label"]).lower()
        if not re.fullmatch(r"[a-z0-9]", label):
            raise StylisticBiasError(f"{w}.label: {o['label']!r} is not one letter or digit")
        value = None if o.get("value") is None else _number(o["value"], f"{w}.value")
        out.append(ChoiceOption(label, str(o["text"]), value))
    labels = [o.label for o in out]
    if len(set(labels)) != len(labels):
        raise StylisticBiasError(f"{where}: duplicate labels {labels}")
    return tuple(out)


def _parse_range(node: Any, where: str) -> NumericRange:
    r = _check_keys(node, where, _RANGE_KEYS, ("low", "high"))
    low, high = _number(r["low"], f"{where}.low"), _number(r["high"], f"{where}.high")
    if not low < high:
        raise StylisticBiasError(f"{where}: low {low:g} must be below high {high:g}")
    rule = str(r.get("ranges", "midpoint"))
    if rule not in RANGE_RULES:
        raise StylisticBiasError(f"{where}.ranges: {rule!r}; valid: {', '.join(RANGE_RULES)}")
    return NumericRange(low, high, str(r.get("unit", "")), rule)


def _parse_task(t: Any, where: str) -> TaskScenario:
    t = _check_keys(t, where, _TASK_KEYS, ("id", "category", "task", "prompt"))
    tid = _int(t["id"], f"{where}.id")
    fields_cfg = t.get("fields") or {}
    if not isinstance(fields_cfg, Mapping):
        raise StylisticBiasError(f"{where}.fields: expected a mapping of placeholder: text")
    fields = tuple((str(k), str(v)) for k, v in fields_cfg.items())
    valid = (*TASK_PROMPT_FIELDS, *(k for k, _ in fields))
    prompt = str(t["prompt"])
    try:
        used = [f for _, f, _, _ in string.Formatter().parse(prompt) if f is not None]
    except ValueError as exc:
        raise StylisticBiasError(f"{where}.prompt: not a valid template: {exc}") from None
    for f in used:
        if f not in valid:
            raise StylisticBiasError(
                f"{where}.prompt: unknown placeholder {{{f}}}; valid: {', '.join(valid)}"
            )
    layout = str(t.get("layout", "two_images"))
    if layout not in LAYOUTS:
        raise StylisticBiasError(f"{where}.layout: {layout!r}; valid: {', '.join(LAYOUTS)}")
    ordinal = t.get("ordinal", False)
    if not isinstance(ordinal, bool):
        raise StylisticBiasError(f"{where}.ordinal: {ordinal!r}; valid: true, false")
    return TaskScenario(
        id=tid,
        category=str(t["category"]),
        task=str(t["task"]),
        prompt=prompt,
        options=_parse_options(t["options"], f"{where}.options") if "options" in t else (),
        ordinal=ordinal,
        range=_parse_range(t["range"], f"{where}.range") if "range" in t else None,
        layout=layout,
        answers=str(t.get("answers", "")),
        positive=str(t.get("positive", "")),
        negative=str(t.get("negative", "")),
        fields=fields,
    )


def _parse_tasks(
    cfg: Mapping[str, Any], taken: Sequence[int], where: str
) -> tuple[TaskScenario, ...]:
    """The optional ``tasks:`` list; ids unique across ``scenarios`` and ``tasks``."""
    if cfg.get("tasks") is None:
        return ()
    tasks = tuple(
        _parse_task(t, f"{where}: tasks[{i}]")
        for i, t in enumerate(_list(cfg["tasks"], f"{where}: tasks"))
    )
    ids = [*taken, *(t.id for t in tasks)]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise StylisticBiasError(f"{where}: tasks: ids {dup} used twice (scenarios and tasks)")
    return tasks


def benchmark_from_config(
    cfg: Mapping[str, Any], where: str = "conf/benchmark", digest: str = ""
) -> Benchmark:
    """Build and validate a :class:`Benchmark` from a protocol mapping (a file's content).

    Every level is checked for unknown and missing keys; ``where`` (the file) prefixes every
    message.
    """
    # A task protocol (``tasks:`` and no ``scenarios:``) needs only its demographics and tasks;
    # the forced-choice keys (letters, orderings, the Fig. 9-12 prompts, the attribute grid) are
    # then optional.
    tasks_only = isinstance(cfg, Mapping) and "tasks" in cfg and "scenarios" not in cfg
    cfg = _check_keys(
        cfg, where, _TOP_KEYS, ("demographics", "tasks") if tasks_only else _TOP_REQUIRED
    )
    demo_cfg = _check_keys(
        cfg["demographics"], f"{where}: demographics", DEMOGRAPHIC_AXES, DEMOGRAPHIC_AXES
    )
    demo = {
        a: tuple(str(x) for x in _list(demo_cfg[a], f"{where}: demographics.{a}"))
        for a in DEMOGRAPHIC_AXES
    }
    marg = _check_keys(
        cfg.get("observed_marginals") or {},
        f"{where}: observed_marginals",
        ("n", *DEMOGRAPHIC_AXES),
    )
    scenarios: list[Scenario] = []
    for i, s in enumerate([] if tasks_only else _list(cfg["scenarios"], f"{where}: scenarios")):
        w = f"{where}: scenarios[{i}]"
        s = _check_keys(s, w, _SCENARIO_KEYS, _SCENARIO_KEYS)
        sid = _int(s["id"], f"{w}.id")
        scenarios.append(Scenario(sid, str(s["category"]), str(s["positive"]), str(s["negative"])))
    ids = [s.id for s in scenarios]
    if len(set(ids)) != len(ids):
        raise StylisticBiasError(f"{where}: scenarios: duplicate scenario ids {sorted(ids)}")
    if tasks_only and "letters" not in cfg:
        cfg = {**cfg, "letters": ["a", "b"]}
    rules = _parse_letters(cfg, where)
    orderings = () if tasks_only else _parse_orderings(cfg, rules.letters, where)
    variations = (
        ()
        if tasks_only and not cfg.get("attributes")
        else _parse_variations(cfg, demo["gender"], where)
    )
    prompts_cfg = _check_keys(
        cfg.get("prompts") or {},
        f"{where}: prompts",
        tuple(PROMPT_FIELDS),
        () if tasks_only else tuple(PROMPT_FIELDS),
    )
    prompts = {k: _template(v, k, f"{where}: prompts.{k}") for k, v in prompts_cfg.items()}
    if "forced_choice" in prompts:
        prompts["forced_choice"] = _fill_letters(
            prompts["forced_choice"], rules.letters, f"{where}: prompts.forced_choice"
        )
    return Benchmark(
        name=str(cfg.get("name", "")),
        demographics=demo,
        observed_marginals=dict(marg),
        scenarios=tuple(scenarios),
        orderings=orderings,
        variations=variations,
        prompts=prompts,
        parser=rules,
        source=where,
        digest=digest,
        tasks=_parse_tasks(cfg, ids, where),
    )


# ---- loading by name --------------------------------------------------------------------------


def protocol_path(name: str | Path) -> Path:
    """The file of a protocol: ``conf/benchmark/<name>.yaml``, or ``name`` itself if it is a
    path to a ``.yaml`` file. Unknown names list the valid ones."""
    from stylisticbias.config import conf_dir

    text = str(name)
    if text.endswith((".yaml", ".yml")):
        p = Path(text)
        if not p.is_file():
            raise StylisticBiasError(f"protocol: file {text} not found")
        return p
    p = conf_dir() / "benchmark" / f"{text}.yaml"
    if not p.is_file():
        valid = sorted(q.stem for q in (conf_dir() / "benchmark").glob("*.yaml"))
        raise StylisticBiasError(
            f"protocol: unknown protocol {text!r} (no conf/benchmark/{text}.yaml); "
            f"valid: {', '.join(valid)}"
        )
    return p


@functools.lru_cache(maxsize=16)
def _load_cached(where: str, digest: str, text: str) -> Benchmark:
    try:
        cfg = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0]
        raise StylisticBiasError(f"{where}: not valid YAML: {first}") from None
    return benchmark_from_config(cfg, where, digest)


def _display(path: Path) -> str:
    from stylisticbias.config import project_root

    try:
        return str(path.resolve().relative_to(project_root().resolve()))
    except ValueError:
        return str(path)


def load_benchmark(name: str | Path) -> Benchmark:
    """Parse ``conf/benchmark/<name>.yaml`` (or a path to a protocol file) once.

    The result is cached by the file's content, so stages and tests may call it freely.
    """
    path = protocol_path(name)
    text = path.read_text(encoding="utf-8")
    return _load_cached(_display(path), hashlib.sha256(text.encode()).hexdigest(), text)


#: Alias: a protocol is loaded by name.
load_protocol = load_benchmark

#: The paper's protocol: what library calls that are given no protocol read (e.g. the parser).
PAPER_PROTOCOL = "stylisticbias"


def default_parser_rules() -> ParserRules:
    """The paper protocol's parser rules (``conf/benchmark/stylisticbias.yaml``)."""
    return load_benchmark(PAPER_PROTOCOL).parser


def benchmark_name(params: Mapping[str, Any]) -> str:
    """The protocol a composed configuration names (``protocol: <name>`` in params.yaml)."""
    if "protocol" not in params:
        hint = " (an old params.yaml: re-compose it)" if "benchmark" in params else ""
        raise StylisticBiasError(
            f"params.yaml: missing key 'protocol'{hint}; valid: a file name of conf/benchmark/"
        )
    value = params["protocol"]
    if not isinstance(value, str | Path):
        raise StylisticBiasError(
            f"params.yaml: protocol: expected a name of conf/benchmark/*.yaml, got {value!r}"
        )
    return str(value)


def benchmark_from_params(params: Mapping[str, Any]) -> Benchmark:
    """The protocol named by a composed configuration (``protocol: <name>``)."""
    return load_benchmark(benchmark_name(params))


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


def check_names(kind: str, names: Iterable[str], valid: Iterable[str], where: str) -> None:
    """Raise a one-line error if any of ``names`` is not in ``valid`` (lists the valid choices)."""
    valid_list = list(valid)
    bad = [n for n in names if n not in valid_list]
    if bad:
        raise StylisticBiasError(
            f"{where}: unknown {kind} {', '.join(map(repr, bad))}; valid: {', '.join(valid_list)}"
        )
