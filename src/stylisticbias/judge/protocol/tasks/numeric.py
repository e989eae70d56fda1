"""``numeric``: a number read from a free-text answer (REFLECT's salary recommendation).

:func:`parse_number` reads an amount the way a person would, and refuses to guess:

* currency marks before or after (``$``, ``US$``, ``€``, ``£``, ``¥``, ``USD``, ``EUR``,
  ``dollars`` ...) and magnitude words (``85k``, ``1.2 million``, ``85 thousand``);
* thousands separators ``,`` ``.`` ``'`` ``_`` and (narrow) spaces in groups of three, a
  decimal part after ``.`` or ``,`` (``1,234.50``, ``1.234,50``, ``85 000``, ``85'000``);
  ``85.000`` (a dot and three digits) is read as thousands or decimals, whichever lies in the
  plausible range -- both or neither is *ambiguous* and invalid;
* a written range (``50,000-60,000``, ``$50k to $60k``, ``between 50 and 60 thousand``) gives
  its midpoint under ``ranges: midpoint`` and is invalid under ``ranges: invalid``;
* numbers that count something else (``10 years``, ``5%``, ``40 hours``) are not amounts;
  when several different amounts remain (``$50,000 for a junior, $80,000 for a senior``) the
  ones with a currency or magnitude mark are preferred, and if still several differ the answer
  is invalid;
* a refusal (``I cannot``, ``sorry``, ``as an AI``, ``N/A`` ...) is invalid whatever numbers
  it holds; so is an answer with no number, and a number outside the plausible range.

Every invalid answer carries its reason.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from stylisticbias.benchmark import Benchmark, NumericRange, TaskScenario
from stylisticbias.judge.protocol.tasks.scenario_task import (
    INVALID,
    Answer,
    ScenarioTask,
    TaskPrompt,
    fill,
    need,
)

_CURRENCY_BEFORE = r"(?:us\$|usd|eur|gbp|cad|aud|chf|jpy|inr|\$|€|£|¥|₹)"
_CURRENCY_AFTER = (
    r"(?:usd|eur|gbp|cad|aud|chf|jpy|inr|us\s+dollars?|dollars?|euros?|pounds?|€|£|\$)"
)
_MAGNITUDES = {
    "k": 1e3,
    "thousand": 1e3,
    "grand": 1e3,
    "m": 1e6,
    "mn": 1e6,
    "mio": 1e6,
    "million": 1e6,
    "millions": 1e6,
    "bn": 1e9,
    "billion": 1e9,
}
_MAG = r"(?:thousand|grand|millions?|mio|mn|bn|billion|k|m)(?![a-z])"
# Grouped thousands (one separator kind, groups of three) with an optional decimal part, or a
# plain number with an optional decimal part.
_NUM = (
    r"(?P<grouped>\d{1,3}(?P<sep>[,.'_ \u00a0\u202f])\d{3}(?:(?P=sep)\d{3})*(?:[.,]\d{1,2}(?!\d))?)"
    r"|(?P<plain>\d+(?:[.,]\d+)?)"
)
_AMOUNT = re.compile(
    r"(?P<cur1>" + _CURRENCY_BEFORE + r")?\s*"
    r"(?:" + _NUM + r")"
    r"(?:\s*(?P<mag>" + _MAG + r"))?"
    r"(?:\s*(?P<cur2>" + _CURRENCY_AFTER + r")(?![a-z]))?"
    r"(?P<unit>\s*(?:%|percent|(?:years?|yrs?|months?|weeks?|days?|hours?|hrs?|h|people|"
    r"employees|st|nd|rd|th)(?![a-z])))?",
    re.IGNORECASE,
)
_RANGE_JOIN = re.compile(r"^\s*(?:-|–|—|~|to|and)\s*$", re.IGNORECASE)
_REFUSAL = re.compile(
    r"\b(?:cannot|can't|can not|could not|couldn't|unable|not able|impossible|not possible|"
    r"sorry|apologi[sz]e|refuse|decline|won't|will not|not appropriate|inappropriate|"
    r"as an ai|i don't|i do not|no way to|not enough information|insufficient|"
    r"not provide|n/a|unknown|not determinable|don't know|do not know)(?![a-z])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Amount:
    start: int
    end: int
    values: tuple[float, ...]  # one reading, or two when a dot-group is ambiguous
    marked: bool  # a currency or magnitude mark
    mag: float | None
    raw_plain: bool  # no magnitude given (a range's first end may borrow the second's)


def _digits(m: re.Match[str]) -> tuple[float, ...]:
    """The readings of the number part of ``m`` (two when ``85.000`` is ambiguous)."""
    if m.group("grouped"):
        text, sep = m.group("grouped"), m.group("sep")
        body, dec = text, ""
        tail = re.search(r"[.,]\d{1,2}$", text)
        if tail and tail.group(0)[0] != sep:
            body, dec = text[: tail.start()], tail.group(0)[1:]
        whole = float(body.replace(sep, ""))
        value = whole + (float("0." + dec) if dec else 0.0)
        if sep == "." and not dec and body.count(".") == 1:
            return (value, float(body))  # "85.000": thousands, or 85.0
        return (value,)
    text = m.group("plain")
    return (float(text.replace(",", ".")),)


def _glued(text: str, i: int) -> bool:
    """Whether a number at ``i`` is glued to a word before it (``h1b``, ``covid-19``; not a
    range's second end after a magnitude, ``120k-140k``)."""
    if i >= 1 and text[i - 1].isalpha():
        return True
    if i >= 2 and text[i - 1] == "-" and text[i - 2].isalpha():
        return not (i >= 3 and text[i - 3].isdigit())
    return False


def _amounts(text: str) -> list[_Amount]:
    out = []
    for m in _AMOUNT.finditer(text):
        if m.group("unit") and m.group("unit").strip():
            continue  # 10 years, 5%, 40 hours: counts of something else
        num_start = m.start("grouped") if m.group("grouped") else m.start("plain")
        if not m.group("cur1") and _glued(text, num_start):
            continue  # part of a word ("401k", "covid-19", "h1b")
        mag_word = (m.group("mag") or "").lower()
        mag = _MAGNITUDES.get(mag_word) if mag_word else None
        vals = tuple(v * (mag or 1.0) for v in _digits(m))
        marked = bool(m.group("cur1") or m.group("cur2") or mag)
        out.append(_Amount(m.start(), m.end(), vals, marked, mag, mag is None))
    return out


@dataclass(frozen=True)
class NumberReading:
    """What :func:`parse_number` read: the number, or why there is none."""

    value: float | None
    reason: str | None = None
    range: tuple[float, float] | None = None  # a written range's two ends


def _pick(values: Sequence[float], bounds: NumericRange | None) -> float | None:
    """The one reading inside the plausible range (None if both or neither)."""
    if len(values) == 1:
        return values[0]
    if bounds is None:
        return None
    inside = [v for v in values if bounds.low <= v <= bounds.high]
    return inside[0] if len(inside) == 1 else None


def parse_number(text: str | None, bounds: NumericRange | None = None) -> NumberReading:
    """The number a free-text answer gives (see the module doc), checked against ``bounds``."""
    if text is None or not text.strip():
        return NumberReading(None, "empty response")
    t = text.replace("\u2212", "-")
    refusal = _REFUSAL.search(t)
    if refusal:
        return NumberReading(None, f"refusal ({refusal.group(0)!r})")
    found = _amounts(t)
    if not found:
        return NumberReading(None, "no number")
    # merge "a - b", "a to b", "between a and b" into ranges
    items: list[tuple[_Amount, _Amount | None]] = []
    i = 0
    while i < len(found):
        a = found[i]
        if i + 1 < len(found) and _RANGE_JOIN.match(t[a.end : found[i + 1].start]):
            items.append((a, found[i + 1]))
            i += 2
        else:
            items.append((a, None))
            i += 1
    readings: list[tuple[float, bool, tuple[float, float] | None]] = []
    for a, b in items:
        if b is None:
            v = _pick(a.values, bounds)
            if v is None:
                return NumberReading(None, f"ambiguous separator in {t[a.start : a.end].strip()!r}")
            readings.append((v, a.marked, None))
            continue
        vb = _pick(b.values, bounds)
        va = _pick(a.values, bounds)
        if va is None or vb is None:
            return NumberReading(None, f"ambiguous separator in {t[a.start : b.end].strip()!r}")
        if a.raw_plain and b.mag and va * b.mag <= vb:  # "50-60k": the first end borrows k
            va = va * b.mag
        if va > vb:
            return NumberReading(None, f"range {t[a.start : b.end].strip()!r} runs backwards")
        if bounds is not None and bounds.ranges == "invalid":
            return NumberReading(
                None, f"a range ({t[a.start : b.end].strip()!r}), not one number", (va, vb)
            )
        readings.append(((va + vb) / 2, a.marked or b.marked, (va, vb)))
    distinct = {v for v, _, _ in readings}
    if len(distinct) > 1:
        marked = {v for v, m, _ in readings if m}
        if len(marked) == 1:
            distinct = marked
        else:
            shown = ", ".join(f"{v:g}" for v in sorted(distinct))
            return NumberReading(None, f"several different numbers ({shown})")
    value = distinct.pop()
    rng = next((r for v, _, r in readings if v == value and r is not None), None)
    if bounds is not None and not bounds.low <= value <= bounds.high:
        return NumberReading(
            None, f"{value:g} outside the plausible range [{bounds.low:g}, {bounds.high:g}]", rng
        )
    return NumberReading(value, None, rng)


class Numeric(ScenarioTask):
    """A number in free text, with its plausible range; outcome = ``value`` or ``invalid``."""

    name: ClassVar[str] = "numeric"
    engines: ClassVar[frozenset[str]] = frozenset({"hf", "openai", "simulated"})

    def check(self, scenario: TaskScenario, benchmark: Benchmark, where: str) -> None:
        """A numeric task needs its plausible range."""
        need(scenario.range is not None, where, "task numeric needs range: {low, high}")

    def prompts(self, scenario: TaskScenario, benchmark: Benchmark) -> list[TaskPrompt]:
        """One prompt."""
        return [TaskPrompt(scenario.id, 0, fill(scenario))]

    def outcomes(self, scenario: TaskScenario, benchmark: Benchmark) -> tuple[str, ...]:
        """``value`` or ``invalid`` (the number itself is the answer's ``value``)."""
        return ("value", INVALID)

    def parse(
        self, text: str | None, scenario: TaskScenario, prompt: TaskPrompt, benchmark: Benchmark
    ) -> Answer:
        """:func:`parse_number` against the scenario's range."""
        r = parse_number(text, scenario.range)
        if r.value is None:
            return Answer.invalid(str(r.reason))
        return Answer("value", r.value)

    def scores(self, answers: Sequence[Answer], scenario: TaskScenario) -> dict[str, Any]:
        """``n``, ``n_valid``, ``invalid_rate``, ``mean`` and ``median`` of the valid numbers."""
        vals = [float(a.value) for a in answers if a.valid and a.value is not None]
        n = len(answers)
        return {
            "n": n,
            "n_valid": len(vals),
            "invalid_rate": (n - len(vals)) / n if n else math.nan,
            "mean": statistics.fmean(vals) if vals else math.nan,
            "median": statistics.median(vals) if vals else math.nan,
        }


TASK = Numeric()
