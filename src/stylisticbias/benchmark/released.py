"""The protocol as the paper's released code spells it (the protocol file's ``released:``).

The released code (``timo-cavelius/StylisticBias``) asks the same questions but lists the
scenarios in another order (``config/judgement_scenarios.json``: its file names carry the index
into that list), spells some poles and values otherwise, words the forced-choice prompt with
quotes, and groups its scenario indices into four categories of its own for the mixed model
(``evaluation/mixed_effects_eta2.py``; ``evaluation/category_agreement.py`` uses the same grouping
by label). :class:`ReleasedSpec` holds these as data; the official layout
(:mod:`stylisticbias.judge.official_layout`) and ``analysis.definitions: official`` read them.

A protocol without ``released:`` has the identity spelling (:meth:`ReleasedSpec.identity`):
the index of a scenario is its position in the file, spellings are ours, the prompt is ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stylisticbias.benchmark.sections import check_keys, integer, non_empty_list
from stylisticbias.errors import StylisticBiasError

_KEYS = ("scenario_order", "poles", "values", "prompt", "scenario_categories")
#: the placeholders of the released prompt (the two slots, in the order they are shown)
PROMPT_SLOTS = ("letter_1", "option_1", "letter_2", "option_2")


@dataclass(frozen=True)
class ReleasedSpec:
    """The released code's spellings of one protocol.

    ``scenario_order``: our scenario id at each released index (index ``i`` is
    ``scenario_order[i - 1]``). ``poles``: our pole spelling -> the released one (others are
    the same). ``values``: ``(feature key, our value)`` -> the released value (others are the
    same). ``prompt``: the released forced-choice prompt (``str.format`` with
    :data:`PROMPT_SLOTS`); empty: ours. ``scenario_categories``: category -> released indices.
    """

    scenario_order: tuple[int, ...]
    poles: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[tuple[str, str], str] = field(default_factory=dict)
    prompt: str = ""
    scenario_categories: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def identity(cls, scenario_ids: Sequence[int]) -> ReleasedSpec:
        """Our own spelling: index = position in the protocol file."""
        return cls(tuple(int(i) for i in scenario_ids))

    def index_of(self, scenario_id: int) -> int:
        """The released index (1-based) of our scenario id."""
        try:
            return self.scenario_order.index(int(scenario_id)) + 1
        except ValueError:
            raise StylisticBiasError(
                f"scenario {scenario_id} has no released index; valid: "
                + ", ".join(map(str, sorted(self.scenario_order)))
            ) from None

    def scenario_at(self, index: int) -> int | None:
        """Our scenario id at a released index (None: no such index)."""
        return self.scenario_order[index - 1] if 1 <= index <= len(self.scenario_order) else None

    def pole(self, text: str) -> str:
        """The released spelling of one of our poles."""
        return self.poles.get(text, text)

    def value(self, key: str, value: str) -> str:
        """The released spelling of our variation value ``value`` of feature ``key``."""
        return self.values.get((key, value), value)

    def category_of_id(self) -> dict[int, str]:
        """Our scenario id -> the released category (its index sets read through
        :attr:`scenario_order`); empty when the protocol names none."""
        return {
            self.scenario_order[i - 1]: cat
            for cat, idx in self.scenario_categories.items()
            for i in idx
        }


def parse_released(
    cfg: Any,
    scenario_ids: Sequence[int],
    poles: Sequence[str],
    values: Sequence[tuple[str, str]],
    where: str,
) -> ReleasedSpec | None:
    """The ``released:`` section (None when absent), checked against the protocol's scenario
    ids, pole spellings and ``(key, value)`` pairs."""
    if cfg is None:
        return None
    w = f"{where}: released"
    cfg = check_keys(cfg, w, _KEYS, ("scenario_order",))
    order = tuple(
        integer(x, f"{w}.scenario_order")
        for x in non_empty_list(cfg["scenario_order"], f"{w}.scenario_order")
    )
    if sorted(order) != sorted(int(i) for i in scenario_ids):
        raise StylisticBiasError(
            f"{w}.scenario_order: {list(order)} is not an order of the scenario ids "
            f"{sorted(scenario_ids)}"
        )
    pole_map = {str(k): str(v) for k, v in dict(cfg.get("poles") or {}).items()}
    bad = sorted(set(pole_map) - set(poles))
    if bad:
        raise StylisticBiasError(f"{w}.poles: unknown pole(s) {bad}; valid: {sorted(set(poles))}")
    value_map: dict[tuple[str, str], str] = {}
    keys = {k for k, _ in values}
    for key, m in dict(cfg.get("values") or {}).items():
        if key not in keys:
            raise StylisticBiasError(
                f"{w}.values: unknown feature key {key!r}; valid: {', '.join(sorted(keys))}"
            )
        for v, spelt in dict(m or {}).items():
            if (key, str(v)) not in set(values):
                valid = ", ".join(x for k, x in values if k == key)
                raise StylisticBiasError(f"{w}.values.{key}: unknown value {v!r}; valid: {valid}")
            value_map[(str(key), str(v))] = str(spelt)
    prompt = str(cfg.get("prompt") or "")
    if prompt:
        try:
            prompt.format(**{k: "" for k in PROMPT_SLOTS})
        except (KeyError, IndexError, ValueError) as exc:
            raise StylisticBiasError(
                f"{w}.prompt: not a template of {', '.join(PROMPT_SLOTS)} ({exc})"
            ) from None
    cats: dict[str, tuple[int, ...]] = {}
    for cat, idx in dict(cfg.get("scenario_categories") or {}).items():
        cats[str(cat)] = tuple(
            integer(i, f"{w}.scenario_categories.{cat}")
            for i in non_empty_list(idx, f"{w}.scenario_categories.{cat}")
        )
    if cats:
        listed = sorted(i for idx in cats.values() for i in idx)
        if listed != list(range(1, len(order) + 1)):
            raise StylisticBiasError(
                f"{w}.scenario_categories: the indices {listed} are not 1..{len(order)} once each"
            )
    return ReleasedSpec(order, pole_map, value_map, prompt, cats)
