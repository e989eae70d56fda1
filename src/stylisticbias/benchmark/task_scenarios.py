"""A protocol's ``tasks:`` list -> checked :class:`~.spec.TaskScenario` entries (the task-typed
scenarios of REFLECT, VIGNETTE...: options, numeric ranges, image layouts, prompt fields).

Errors are one line naming the file, the entry and the valid keys or values.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from stylisticbias.benchmark.sections import check_keys, integer, non_empty_list
from stylisticbias.benchmark.spec import ChoiceOption, NumericRange, TaskScenario
from stylisticbias.errors import StylisticBiasError

_TASK_KEYS = (
    "id",
    "category",
    "task",
    "prompt",
    "options",
    "ordinal",
    "range",
    "layout",
    "answers",
    "positive",
    "negative",
    "fields",
    "system",
)
_OPTION_KEYS = ("label", "text", "value")
_RANGE_KEYS = ("low", "high", "unit", "ranges")
#: How a numeric task reads a written range ("50-60k"): its midpoint, or invalid.
RANGE_RULES = ("midpoint", "invalid")
#: How a pairwise task shows its two images: two image inputs, or one side-by-side composite.
LAYOUTS = ("two_images", "composite")
#: Placeholders every task prompt may use besides its own ``fields``.
TASK_PROMPT_FIELDS = ("options", "description", "label_1", "label_2", "person")


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StylisticBiasError(f"{where}: {value!r} is not a number")
    return float(value)


def _parse_options(node: Any, where: str) -> tuple[ChoiceOption, ...]:
    out: list[ChoiceOption] = []
    for j, o in enumerate(non_empty_list(node, where)):
        w = f"{where}[{j}]"
        o = check_keys(o, w, _OPTION_KEYS, ("label", "text"))
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
    r = check_keys(node, where, _RANGE_KEYS, ("low", "high"))
    low, high = _number(r["low"], f"{where}.low"), _number(r["high"], f"{where}.high")
    if not low < high:
        raise StylisticBiasError(f"{where}: low {low:g} must be below high {high:g}")
    rule = str(r.get("ranges", "midpoint"))
    if rule not in RANGE_RULES:
        raise StylisticBiasError(f"{where}.ranges: {rule!r}; valid: {', '.join(RANGE_RULES)}")
    return NumericRange(low, high, str(r.get("unit", "")), rule)


def _parse_task(t: Any, where: str) -> TaskScenario:
    t = check_keys(t, where, _TASK_KEYS, ("id", "category", "task", "prompt"))
    tid = integer(t["id"], f"{where}.id")
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
        system=str(t.get("system", "")),
    )


def parse_tasks(
    cfg: Mapping[str, Any], taken: Sequence[int], where: str
) -> tuple[TaskScenario, ...]:
    """The optional ``tasks:`` list; ids unique across ``scenarios`` and ``tasks``."""
    if cfg.get("tasks") is None:
        return ()
    tasks = tuple(
        _parse_task(t, f"{where}: tasks[{i}]")
        for i, t in enumerate(non_empty_list(cfg["tasks"], f"{where}: tasks"))
    )
    ids = [*taken, *(t.id for t in tasks)]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise StylisticBiasError(f"{where}: tasks: ids {dup} used twice (scenarios and tasks)")
    return tasks
