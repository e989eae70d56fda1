"""Parse a free-form forced-choice response into (a) / (b) / invalid (paper App. C.2).

Rules (App. C.2: "responses that cannot be unambiguously mapped to one of the two options
including refusals, hedged answers, and outputs containing both letters or neither are recorded as
invalid"):

* A **letter mention** is one of
    - a parenthesised letter anywhere: ``(a)``, ``( B )``;
    - a bare letter that *starts* the response, after optional decoration (``*``, quotes, ``[``,
      ``Answer:``, ``Option``, ``The answer is``), followed by punctuation or the end:
      ``a``, ``A)``, ``b.``, ``b - ...``, ``**B**``;
    - a letter after an answer word: ``answer: b``, ``option a,`` ``I choose (b)``.
  A letter followed (after spaces) by a word is the English article, not an answer:
  ``a person ...`` and ``A competent ...`` mention nothing.
* A **hedge/refusal marker** is a whole word or phrase such as *neither, both, either, cannot,
  can't, unable, sorry, maybe, perhaps, depends, not sure, hard to, as an AI* (``_MARKERS``).
* Verdict: any marker -> invalid; else exactly one distinct letter -> that letter; else
  (both letters, or neither) -> invalid.

Prefix decidability (used by the exact engine). Every pattern is written so that a match is
*confirmed* only by a character that follows it inside the text; at the end of a finished
response a sentinel plays that character. Hence on an unfinished prefix the confirmed mentions
and markers are exactly those that every continuation keeps, both sets only grow as text is
appended, and the verdict can be fixed early only when it is *invalid* (a marker, or both
letters, is already confirmed). A valid letter is never final before the response ends, because
any continuation may still add ``or (b)``. :func:`decide_prefix` returns ``None`` until then.
"""

from __future__ import annotations

import re
from typing import Literal

from stylisticbias.benchmark import Ordering

Letter = Literal["a", "b"]
Outcome = Literal["positive", "negative", "invalid"]

#: Appended to finished text so that end-of-text confirms a pending match (never in model output).
_END = "\x00"

# A letter is an answer only if what follows (after optional spaces) is neither a letter nor a
# digit: "a)", "a.", "a -", "a<END>" confirm; "a person" does not; "a " alone is pending.
_AFTER = r"(?=\s*[^\sa-z0-9])"

_PAREN = re.compile(r"\(\s*([ab])\s*\)")
_DECOR = r"(?:[\s*_`\"'\[\]#>:.-]|answer|option|choice|the\s+answer\s+is|my\s+answer\s+is|is)*"
_LEADING = re.compile(r"^" + _DECOR + r"([ab])" + _AFTER)
_AFTER_WORD = re.compile(
    r"\b(?:answer|option|choice|choose|chose|select|pick|go\s+with)(?:\s+is)?\s*[:\-]?\s*[*_`\"']*\s*"
    r"\(?([ab])" + _AFTER
)
_MARKER_WORDS = (
    "neither",
    "both",
    "either",
    "cannot",
    "can't",
    "can’t",
    "can not",
    "could not",
    "couldn't",
    "unable",
    "impossible",
    "not possible",
    "sorry",
    "apologi[sz]e",
    "refuse",
    "won't",
    "will not",
    "not appropriate",
    "inappropriate",
    "i don't",
    "i do not",
    "not sure",
    "unsure",
    "unclear",
    "not clear",
    "hard to",
    "difficult to",
    "depends",
    "maybe",
    "perhaps",
    "possibly",
    "as an ai",
    "no way to",
)
# The trailing class confirms the end of the word ("both" vs "bothersome").
_MARKERS = re.compile(r"\b(?:" + "|".join(_MARKER_WORDS) + r")(?=[^a-z0-9])")


def _normalise(text: str, finished: bool) -> str:
    """Lower-case, unify quotes; append the end sentinel when the text is finished."""
    t = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    t = t.lstrip()
    if finished:
        t = t.rstrip() + _END
    return t


def _letters(t: str) -> set[str]:
    found = {m.group(1) for m in _PAREN.finditer(t)}
    lead = _LEADING.match(t)
    if lead:
        found.add(lead.group(1))
    found.update(m.group(1) for m in _AFTER_WORD.finditer(t))
    return found


def _verdict(t: str) -> Letter | Literal["invalid"] | None:
    """Verdict from the confirmed evidence in ``t``; None when nothing is fixed yet."""
    if _MARKERS.search(t):
        return "invalid"
    letters = _letters(t)
    if len(letters) >= 2:
        return "invalid"
    if t.endswith(_END):
        return letters.pop() if len(letters) == 1 else "invalid"  # type: ignore[return-value]
    return None


def parse_response(text: str | None) -> Letter | None:
    """The letter a finished response chose, or None if it is invalid (App. C.2)."""
    if text is None:
        return None
    v = _verdict(_normalise(text, finished=True))
    return v if v in ("a", "b") else None  # type: ignore[return-value]


def letter_outcome(letter: Letter | None, ordering: Ordering) -> Outcome:
    """Map a parsed letter to the pole it stands for under ``ordering``."""
    if letter is None:
        return "invalid"
    return ordering.pole_of(letter)


def classify(text: str | None, ordering: Ordering) -> Outcome:
    """``positive`` / ``negative`` / ``invalid`` for a finished response under ``ordering``."""
    return letter_outcome(parse_response(text), ordering)


def decide_prefix(text: str, finished: bool) -> Letter | Literal["invalid"] | None:
    """The parse verdict if it is already fixed whatever text follows ``text``; else None.

    ``finished=True`` (EOS or the token limit) always returns the final verdict
    (``"a"``, ``"b"`` or ``"invalid"``). On an unfinished prefix only ``"invalid"`` can be
    decided early (a hedge/refusal marker or both letters are already confirmed).
    """
    v = _verdict(_normalise(text, finished))
    if finished:
        return v if v is not None else "invalid"
    return v
