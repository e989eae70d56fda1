"""A protocol's headline findings about one judged model, in plain words: what the audit's bias
card says (:mod:`stylisticbias.audit`).

Each family's ``audit`` hook (:data:`stylisticbias.family.HOOKS`) reads its protocol's report
(``reports/<protocol>/``) and returns a :class:`Finding` per model and headline number: the
estimate, its interval, its unit and one sentence of at most :data:`MAX_WORDS` words that says
the direction, the unit and what the number compares with. One finding per model and protocol
is the protocol's **headline** (``headline=True``): its cell of the cross-protocol leaderboard.
The helpers here format numbers the same way on every card (:func:`value_text`,
:func:`interval_text`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from stylisticbias.errors import StylisticBiasError

#: the units a finding may have, and how a value of each reads
UNITS: dict[str, str] = {
    "pp": "percentage points (a difference of two shares, x 100)",
    "percent": "a share (0 to 1), shown as a percentage",
    "percent-of-100": "a share already in percent (0 to 100)",
    "log-odds": "natural log-odds (0: as often as the comparison)",
    "percent-gap": "a relative gap, in percent",
}
#: the longest sentence a finding may carry (a bias card bullet)
MAX_WORDS = 30


@dataclass(frozen=True)
class Finding:
    """One headline number of one judged model on one protocol (see the module doc)."""

    model: str
    key: str  # the metric's key, e.g. ``sbs``, ``halo_rate``, ``win_rate.max``
    label: str  # for people, e.g. ``mean shift of judgments (SBS)``
    value: float
    ci_low: float | None
    ci_high: float | None
    unit: str  # one of :data:`UNITS`
    text: str  # the plain-words sentence (direction, unit, comparison)
    headline: bool = False  # the protocol's leaderboard cell

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise StylisticBiasError(
                f"finding {self.key} of {self.model}: unit {self.unit!r}; valid: {', '.join(UNITS)}"
            )
        if len(self.text.split()) > MAX_WORDS:
            raise StylisticBiasError(
                f"finding {self.key} of {self.model}: {len(self.text.split())} words; at most "
                f"{MAX_WORDS} fit a bias card bullet"
            )

    @property
    def has_ci(self) -> bool:
        """Whether an interval is known."""
        return self.ci_low is not None and self.ci_high is not None

    def as_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready values (numbers rounded to 6 significant digits)."""
        out = asdict(self)
        for k in ("value", "ci_low", "ci_high"):
            out[k] = rounded(out[k])
        return out


def rounded(v: float | None) -> float | None:
    """``v`` to 6 significant digits (None stays None): byte-stable JSON and CSV."""
    if v is None or not math.isfinite(float(v)):
        return None
    return float(f"{float(v):.6g}")


def number(x: Any) -> float | None:
    """``x`` as a finite float, else None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def value_text(v: float, unit: str, signed: bool = True) -> str:
    """``v`` in ``unit``: ``+1.2 pp``, ``53%``, ``+0.84``, ``-12.5%``."""
    if unit == "pp":
        return f"{100 * v:+.1f} pp" if signed else f"{100 * v:.1f} pp"
    if unit == "percent":
        return f"{100 * v:.1f}%"
    if unit == "percent-of-100":
        return f"{v:.1f}%"
    if unit == "percent-gap":
        return f"{v:+.1f}%"
    return f"{v:+.2f}" if signed else f"{v:.2f}"


def interval_text(lo: float | None, hi: float | None, unit: str, level: float) -> str:
    """``95% CI +0.6 to +1.8 pp`` (empty without an interval)."""
    if lo is None or hi is None:
        return ""
    a, b = value_text(lo, unit), value_text(hi, unit)
    suffix = ""
    for u in (" pp", "%"):
        if a.endswith(u) and b.endswith(u):
            a, suffix = a[: -len(u)], u
            b = b[: -len(u)]
    return f"{level:.0%} CI {a} to {b}{suffix}"


def finding(
    model: str,
    key: str,
    label: str,
    metrics: Mapping[str, float],
    unit: str,
    sentence: str | Callable[[float], str],
    level: float,
    headline: bool = False,
) -> Finding | None:
    """The finding ``key`` of a flat headline mapping (``key``, ``key.ci_low``,
    ``key.ci_high``), or None when ``metrics`` lacks it. ``sentence`` (or ``sentence(value)``,
    when the words depend on the direction) is formatted with ``value`` (the number in its
    unit) and ``ci`` (`` (95% CI a to b)`` or nothing)."""
    v = number(metrics.get(key))
    if v is None:
        return None
    lo, hi = number(metrics.get(f"{key}.ci_low")), number(metrics.get(f"{key}.ci_high"))
    ci = interval_text(lo, hi, unit, level)
    template = sentence(v) if callable(sentence) else sentence
    text = template.format(value=value_text(v, unit), ci=f" ({ci})" if ci else "")
    return Finding(model, key, label, v, lo, hi, unit, text, headline)
