"""A protocol file's mapping -> the checked :class:`~.spec.Benchmark`
(:func:`benchmark_from_config`).

Every level is checked for unknown and missing keys; errors are one line naming the file, the
key and the valid keys.
"""

from __future__ import annotations

import logging
import re
import string
from collections.abc import Mapping
from typing import Any

from stylisticbias.benchmark.released import parse_released
from stylisticbias.benchmark.sections import (
    check_keys,
    integer,
    non_empty_list,
    parse_counterfactual,
    parse_licence,
    parse_option_case,
    parse_seeds,
    parse_statistics,
    parse_stereotype,
    parse_tags,
)
from stylisticbias.benchmark.spec import (
    DEFAULT_TASK,
    DEMOGRAPHIC_AXES,
    POLES,
    Benchmark,
    Ordering,
    ParserRules,
    Scenario,
    VariationValue,
)
from stylisticbias.benchmark.task_scenarios import parse_tasks
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import FAMILIES, FAMILY_NAMES, check_family, check_suite

log = logging.getLogger(__name__)

# ---- parsing the YAML -------------------------------------------------------------------------

#: Placeholders each prompt template may use (str.format fields).
PROMPT_FIELDS: dict[str, tuple[str, ...]] = {
    "base_face": ("age", "gender", "ethnicity", "body_type"),
    "feature_variation": ("gender", "feature_key", "feature_value"),
    "fashion_variation": ("gender", "fashion_style"),
    "forced_choice": (
        "letter_1",
        "option_1",
        "letter_2",
        "option_2",
        "letters",
        "answer_1",
        "answer_2",
    ),
}
_TOP_KEYS = (
    "name",
    "demographics",
    "observed_marginals",
    "scenarios",
    "prompts",
    "letters",
    "parser",
    "orderings",
    "attributes",
    "task",
    "tasks",
    "option_case",
    "seeds",
    "statistics",
    "licence",
    "counterfactual",
    "family",
    "paradigm",
    "released",
)
_TOP_REQUIRED = ("demographics", "scenarios", "prompts", "letters", "orderings", "attributes")
_SCENARIO_REQUIRED = ("id", "category", "positive", "negative")
_SCENARIO_KEYS = (*_SCENARIO_REQUIRED, "subcategory", "tags", "stereotype")
_ORDERING_REQUIRED = ("id", "slots")
_ORDERING_KEYS = (*_ORDERING_REQUIRED, "answer")
_PARSER_KEYS = ("word_letters",)
_ATTRIBUTE_KEYS = (
    "name",
    "table12_category",
    "key",
    "category",
    "gender_scope",
    "framing",
    "values",
)
_ATTRIBUTE_REQUIRED = ("name", "key", "category", "values")
_VALUE_KEYS = ("value", "prompt", "label", "evaluated", "exclude_gender")
_FRAMINGS = ("face", "full_body")


_check_keys = check_keys  # one copy, in benchmark.sections


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
    for i, o in enumerate(non_empty_list(cfg["orderings"], f"{where}: orderings")):
        w = f"{where}: orderings[{i}]"
        o = _check_keys(o, w, _ORDERING_KEYS, _ORDERING_REQUIRED)
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
        answer = tuple(str(x) for x in o.get("answer") or ())
        if answer and sorted(answer) != sorted(letters):
            raise StylisticBiasError(
                f"{w}.answer: must name letters {', '.join(letters)} once each; got {answer}"
            )
        orderings.append(Ordering(integer(o["id"], f"{w}.id"), slots, letters, answer))  # type: ignore[arg-type]
    ids = [o.id for o in orderings]
    if len(set(ids)) != len(ids):
        raise StylisticBiasError(f"{where}: orderings: duplicate ordering ids {ids}")
    return tuple(orderings)


def _parse_letters(cfg: Mapping[str, Any], where: str) -> ParserRules:
    letters = tuple(str(x) for x in non_empty_list(cfg["letters"], f"{where}: letters"))
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
    for i, a in enumerate(non_empty_list(cfg["attributes"], f"{where}: attributes")):
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
        for j, v in enumerate(non_empty_list(a["values"], f"{wa}.values")):
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


def _inferred_family(cfg: Mapping[str, Any], where: str) -> str:
    """The family of an older file without ``family:``, from its shape (with a warning)."""
    if cfg.get("kind") == "soda":
        family = "soda"
    elif "tasks" in cfg and "scenarios" not in cfg:
        family = "tasks"
    else:
        stats = cfg.get("statistics")
        suite = stats.get("suite") if isinstance(stats, Mapping) else None
        family = "paired_variation" if suite == "paired_variation" else "variation_shift"
    log.warning(
        "%s: no `family:`; inferred %s (add `family: %s`; valid: %s)",
        where,
        family,
        family,
        ", ".join(FAMILY_NAMES),
    )
    return family


def protocol_family(cfg: Any, where: str) -> str:
    """The checked ``family:`` of a protocol mapping (inferred, with a warning, when absent)."""
    if not isinstance(cfg, Mapping):
        raise StylisticBiasError(f"{where}: expected a mapping of protocol keys")
    if "family" not in cfg:
        return _inferred_family(cfg, where)
    return check_family(cfg["family"], where)


def _check_shape(family: str, cfg: Mapping[str, Any], where: str) -> None:
    """The sections a family's protocol must (not) have: one line naming what is wrong."""
    if family == "soda":
        raise StylisticBiasError(
            f"{where}: family soda is the generator audit's protocol (the soda stage reads it: "
            "soda.protocol), not a judged one; judged families: "
            + ", ".join(f for f in FAMILY_NAMES if f != "soda")
        )
    tasks_only = "tasks" in cfg and "scenarios" not in cfg
    if family == "tasks" and not tasks_only:
        raise StylisticBiasError(
            f"{where}: family tasks: list the questions under `tasks:` (no `scenarios:`)"
        )
    if family != "tasks" and tasks_only:
        raise StylisticBiasError(
            f"{where}: family {family}: needs `scenarios:` (a protocol of `tasks:` only is "
            "family tasks)"
        )


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
    family = protocol_family(cfg, where)
    _check_shape(family, cfg, where)
    paradigm = FAMILIES.lookup(family).check_paradigm(cfg.get("paradigm"), where)
    tasks_only = family == "tasks"
    cfg = _check_keys(
        cfg, where, _TOP_KEYS, ("demographics", "tasks") if tasks_only else _TOP_REQUIRED
    )
    demo_cfg = _check_keys(
        cfg["demographics"], f"{where}: demographics", DEMOGRAPHIC_AXES, DEMOGRAPHIC_AXES
    )
    demo = {
        a: tuple(str(x) for x in non_empty_list(demo_cfg[a], f"{where}: demographics.{a}"))
        for a in DEMOGRAPHIC_AXES
    }
    marg = _check_keys(
        cfg.get("observed_marginals") or {},
        f"{where}: observed_marginals",
        ("n", *DEMOGRAPHIC_AXES),
    )
    scenarios: list[Scenario] = []
    for i, s in enumerate(
        [] if tasks_only else non_empty_list(cfg["scenarios"], f"{where}: scenarios")
    ):
        w = f"{where}: scenarios[{i}]"
        s = _check_keys(s, w, _SCENARIO_KEYS, _SCENARIO_REQUIRED)
        sid = integer(s["id"], f"{w}.id")
        scenarios.append(
            Scenario(
                sid,
                str(s["category"]),
                str(s["positive"]),
                str(s["negative"]),
                subcategory=str(s.get("subcategory") or ""),
                tags=parse_tags(s.get("tags"), f"{w}.tags"),
                stereotype=parse_stereotype(s.get("stereotype"), demo, f"{w}.stereotype"),
            )
        )
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
    # the edit prompts are required only for the framings the attribute grid uses
    needed = {"face": "feature_variation", "full_body": "fashion_variation"}
    required = ("base_face", "forced_choice", *sorted({needed[v.framing] for v in variations}))
    prompts_cfg = _check_keys(
        cfg.get("prompts") or {},
        f"{where}: prompts",
        tuple(PROMPT_FIELDS),
        () if tasks_only else required,
    )
    prompts = {k: _template(v, k, f"{where}: prompts.{k}") for k, v in prompts_cfg.items()}
    if "forced_choice" in prompts:
        prompts["forced_choice"] = _fill_letters(
            prompts["forced_choice"], rules.letters, f"{where}: prompts.forced_choice"
        )
    statistics = parse_statistics(
        cfg.get("statistics"),
        demo,
        [(v.attribute, v.value) for v in variations],
        [t for s in scenarios for t in s.tags],
        f"{where}: statistics",
    )
    check_suite(family, statistics.suite, where)
    return Benchmark(
        name=str(cfg.get("name", "")),
        family=family,
        paradigm=paradigm,
        demographics=demo,
        observed_marginals=dict(marg),
        scenarios=tuple(scenarios),
        orderings=orderings,
        variations=variations,
        prompts=prompts,
        parser=rules,
        source=where,
        digest=digest,
        task=str(cfg.get("task") or DEFAULT_TASK),
        tasks=parse_tasks(cfg, ids, where),
        option_case=parse_option_case(cfg.get("option_case"), f"{where}: option_case"),
        seeds=parse_seeds(cfg.get("seeds"), f"{where}: seeds"),
        statistics=statistics,
        licence=parse_licence(cfg.get("licence"), f"{where}: licence"),
        counterfactual=parse_counterfactual(cfg.get("counterfactual"), demo, where),
        released=parse_released(
            cfg.get("released"),
            ids,
            [p for s in scenarios for p in (s.positive, s.negative)],
            [(v.key, v.value) for v in variations],
            where,
        ),
    )
