"""The benchmark definition (demographics, variations, scenarios, prompts, orderings) as typed data.

Everything here is read from the ``benchmark`` section of the composed configuration
(``conf/benchmark/stylisticbias.yaml``); nothing in the code repeats the paper's lists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from stylisticbias.errors import StylisticBiasError

DEMOGRAPHIC_AXES: tuple[str, ...] = ("age", "gender", "ethnicity", "body_type")
Pole = Literal["positive", "negative"]
Letter = Literal["a", "b"]


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
class Ordering:
    """One order/label variant of App. C.2: ``slots`` = ((letter, pole), (letter, pole))."""

    id: int
    slots: tuple[tuple[Letter, Pole], tuple[Letter, Pole]]

    def pole_of(self, letter: str) -> Pole:
        """Which pole a letter stands for under this ordering."""
        for slot_letter, pole in self.slots:
            if slot_letter == letter:
                return pole
        raise StylisticBiasError(f"ordering {self.id}: letter {letter!r} is not one of (a), (b)")

    @property
    def positive_letter(self) -> Letter:
        """The letter the positive pole carries under this ordering."""
        return next(letter for letter, pole in self.slots if pole == "positive")

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
    """The whole benchmark definition."""

    name: str
    demographics: dict[str, tuple[str, ...]]
    observed_marginals: dict[str, Any]
    scenarios: tuple[Scenario, ...]
    orderings: tuple[Ordering, ...]
    variations: tuple[VariationValue, ...]
    prompts: dict[str, str]

    # ---- lookups -------------------------------------------------------------------------
    def scenario(self, scenario_id: int) -> Scenario:
        """Scenario by id; unknown ids name the valid range."""
        for s in self.scenarios:
            if s.id == scenario_id:
                return s
        valid = ", ".join(str(s.id) for s in self.scenarios)
        raise StylisticBiasError(f"unknown scenario_id {scenario_id!r}; valid: {valid}")

    def ordering(self, ordering_id: int) -> Ordering:
        """Ordering by id (1-4)."""
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
            letter_1=l1, option_1=scenario.pole(p1), letter_2=l2, option_2=scenario.pole(p2)
        )


def _require(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in mapping:
        raise StylisticBiasError(f"{where}: missing key {key!r}")
    return mapping[key]


def benchmark_from_config(cfg: Mapping[str, Any]) -> Benchmark:
    """Build and validate a :class:`Benchmark` from the ``benchmark`` config section."""
    where = "conf/benchmark"
    demo = {
        a: tuple(_require(cfg["demographics"], a, f"{where}.demographics"))
        for a in DEMOGRAPHIC_AXES
    }
    scenarios = tuple(
        Scenario(int(s["id"]), str(s["category"]), str(s["positive"]), str(s["negative"]))
        for s in _require(cfg, "scenarios", where)
    )
    ids = [s.id for s in scenarios]
    if len(set(ids)) != len(ids):
        raise StylisticBiasError(f"{where}.scenarios: duplicate scenario ids {sorted(ids)}")
    orderings: list[Ordering] = []
    for o in _require(cfg, "orderings", where):
        slots = tuple((str(letter), str(pole)) for letter, pole in o["slots"])
        letters = sorted(letter for letter, _ in slots)
        poles = sorted(pole for _, pole in slots)
        if letters != ["a", "b"] or poles != ["negative", "positive"]:
            raise StylisticBiasError(
                f"{where}.orderings[id={o.get('id')}]: slots must use letters a, b and poles "
                f"positive, negative once each; got {slots}"
            )
        orderings.append(Ordering(int(o["id"]), slots))  # type: ignore[arg-type]
    variations: list[VariationValue] = []
    for a in _require(cfg, "attributes", where):
        scope = str(a.get("gender_scope", "all"))
        if scope not in ("all", *demo["gender"]):
            raise StylisticBiasError(
                f"{where}.attributes[{a['name']}].gender_scope: {scope!r}; valid: all, "
                + ", ".join(demo["gender"])
            )
        framing = str(a.get("framing", "face"))
        if framing not in ("face", "full_body"):
            raise StylisticBiasError(
                f"{where}.attributes[{a['name']}].framing: {framing!r}; valid: face, full_body"
            )
        for v in a["values"]:
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
                    exclude_gender=tuple(v.get("exclude_gender", ()) or ()),
                    table12_category=str(a.get("table12_category", a["name"])),
                )
            )
    slugs = [v.slug for v in variations]
    dup = {s for s in slugs if slugs.count(s) > 1}
    if dup:
        raise StylisticBiasError(f"{where}.attributes: duplicate variation values {sorted(dup)}")
    prompts = {k: str(v) for k, v in _require(cfg, "prompts", where).items()}
    for k in ("base_face", "feature_variation", "fashion_variation", "forced_choice"):
        _require(prompts, k, f"{where}.prompts")
    return Benchmark(
        name=str(cfg.get("name", "stylisticbias")),
        demographics=demo,
        observed_marginals=dict(cfg.get("observed_marginals", {}) or {}),
        scenarios=scenarios,
        orderings=tuple(orderings),
        variations=tuple(variations),
        prompts=prompts,
    )


def check_names(kind: str, names: Iterable[str], valid: Iterable[str], where: str) -> None:
    """Raise a one-line error if any of ``names`` is not in ``valid`` (lists the valid choices)."""
    valid_list = list(valid)
    bad = [n for n in names if n not in valid_list]
    if bad:
        raise StylisticBiasError(
            f"{where}: unknown {kind} {', '.join(map(repr, bad))}; valid: {', '.join(valid_list)}"
        )
