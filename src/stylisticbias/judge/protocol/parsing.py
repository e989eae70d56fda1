"""Parse a free-form forced-choice response into (a) / (b) / invalid (paper App. C.2).

Two readers (``judge.parser``):

Before reading, a response is *folded* (:func:`fold`: NFKC per character, so ``Ａ``, ``（Ｂ）``
and ``答案：A`` read as ``A``, ``(B)``, ``答案:A``; Cyrillic/Greek look-alikes of a and b mapped to
them) and a leading reasoning block (``<think>...</think>``, :func:`split_reasoning`) is dropped:
the answer is what follows it, and a response cut off inside its reasoning is invalid.

``paper`` (default; App. C.2 as written: "responses that cannot be unambiguously mapped to one
of the two options including refusals, hedged answers, and outputs containing both letters or
neither are recorded as invalid"; invalid answers leave phi's denominator):

* A **letter mention** is one of
    - a parenthesised letter anywhere: ``(a)``, ``( B )``; an unclosed one, ``(a`` followed by
      punctuation, a line break or the end (``(a: Competent``, a cut-off ``(b``); at the start
      of the response or after an answer word also when a word follows (``(a Trustworthy``), a
      *weak* mention: read only at the end, with no ``)`` after it and no marker anywhere;
    - a bare letter that *starts* the response, after optional decoration (``*``, quotes, ``[``,
      ``Answer:``, ``Option``, ``The answer is``), followed by punctuation, a line break or the end:
      ``a``, ``A)``, ``b.``, ``**B**``, ``A\nThe person ...``;
    - a letter after an answer word, also in JSON and a few other languages: ``answer: b``,
      ``{"answer": "b"}``, ``option a,`` ``I choose (b)``, ``Respuesta: a``;
    - a standalone letter anywhere else followed by punctuation, a line break, the end, or a verb
      that only a letter can take (``is``, ``seems``, ``fits``, ``matches``, ``because``, ``or``
      ...): ``I'd say A.``, ``A is more likely.``, ``La respuesta es B.``, ``答案是 A``; a
      mid-sentence ``a`` is not confirmed by the end of the text alone (``... the person has a``
      is a sentence cut off after the article).
  A letter followed by another word is the English article: ``a person ...``, ``A competent
  ...`` mention nothing.
* A **hedge/refusal marker** is a whole word or phrase such as *neither, both, either, cannot,
  can't, unable, sorry, maybe, perhaps, depends, not sure, hard to, as an AI, could be* (a few
  in other languages), or a negated letter (``not (a)``) (``_MARKERS``).
* Verdict: both letters -> invalid; a marker *before* the first letter mention -> invalid (a
  hedged or refused answer); else exactly one letter -> that letter (a committed answer followed
  by a remark that contains a hedge word, ``(a) Trustworthy. I don't see signs otherwise.``,
  counts); else invalid.

``official``: the reading of the paper's released code (``parse_choice`` in
``judgement/judgement_pipeline.py`` of ``timo-cavelius/StylisticBias``), see
:mod:`~stylisticbias.judge.protocol.official_parser`; with it unparsed answers stay in phi's
denominator (``scores``).

Prefix decidability (``paper`` reader; used by the exact engine). Every pattern is written so
that a match is *confirmed* only by characters that follow it inside the text; at the end of a
finished response a sentinel plays that character. Hence on an unfinished prefix the confirmed
mentions and markers are exactly those that every continuation keeps, and both sets only grow as
text is appended. A letter mention's confirming characters come right after its letter, so once
a marker is confirmed every possible letter mention that starts before it is already decided.
The verdict is therefore fixed early only when it is *invalid* (both letters, or a marker with
no letter before it); a valid letter is never final before the response ends, because any
continuation may still add ``or (b)``. :func:`decide_prefix` returns ``None`` until then.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from stylisticbias.benchmark import Letter, Ordering, ParserRules, default_parser_rules

Outcome = Literal["positive", "negative", "invalid"]
PARSERS = ("paper", "official")

#: Appended to finished text so that end-of-text confirms a pending match (never in model output).
_END = "\x00"

# Verbs (and conjunctions) that can follow a letter but never the article "a".
_LETTER_VERBS = (
    r"(?:is|seems|fits|matches|describes|applies|appears|suits|sounds|because|since|would|or|and"
    r"|nor|vs)"
    r"(?=[^a-z0-9'])"
)
# A letter is an answer if what follows is punctuation, a line break or the end ("a)", "a.",
# "a\n", "a<END>"), or a letter-only verb; "a person" is the article; "a " alone is pending.
_AFTER = r"(?=[ \t]*(?:[^\sa-z0-9]|\n|" + _LETTER_VERBS + r"))"
# Mid-sentence letters: quotes do not confirm (``a "trustworthy" one`` is the article).
_MID_PUNCT = r"[.,;:!?)(\]}*\-\u2014\u3002\uff0c\uff09]|\n"
_AFTER_MID = r"(?=[ \t]*(?:" + _MID_PUNCT + r"|\x00|" + _LETTER_VERBS + r"))"
# A sentence cut off after the article ("... the person has a") must not read as (a): a
# mid-sentence word letter (``parser.word_letters`` of the protocol, English "a") is not confirmed
# by the end of the text alone (a letter that is never a word, "b", is).
_AFTER_MID_WORD = r"(?=[ \t]*(?:" + _MID_PUNCT + r"|" + _LETTER_VERBS + r"))"
_NOT_WORD_BEFORE = r"(?<![a-z0-9\u00c0-\u024f])"
_DECOR = r"(?:[\s*_`\"'\[\]#>:.-]|answer|option|choice|the\s+answer\s+is|my\s+answer\s+is|is)*"
_ANSWER_WORDS = (
    r"answer|option|choice|choose|chose|select|selected|pick|go\s+with|respuesta|antwort|"
    r"r[eé]ponse|risposta|resposta|odpowied[zź]|w[aä]hle|choisis|elijo|escolho|scelgo|"
    r"guess|答案是|答案为|答案為|答案|回答|答え|选择|選択|選擇|选项|選項|정답|답"
)
# The opening tags of a reasoning block that starts a response (``<think>...</think>``); the
# answer is what follows the block's closing tag.
_REASONING_TAGS = ("think", "thinking", "reasoning")
# Look-alikes of the Latin letters in other scripts (NFKC keeps them): Cyrillic and Greek
# capitals and small letters drawn as a/A or b/B.
_HOMOGLYPHS = str.maketrans(
    {
        "\u0430": "a",  # Cyrillic small a
        "\u0410": "A",  # Cyrillic capital A
        "\u03b1": "a",  # Greek small alpha
        "\u0391": "A",  # Greek capital Alpha
        "\u0412": "B",  # Cyrillic capital Ve
        "\u0392": "B",  # Greek capital Beta
        "\u03b2": "b",  # Greek small beta
        "\u042c": "b",  # Cyrillic capital soft sign
        "\u044c": "b",  # Cyrillic small soft sign
        "\u13aa": "A",  # Cherokee A
        "\u13f4": "B",  # Cherokee Yv
        "\u0251": "a",  # Latin small alpha
    }
)
_MARKER_WORDS = (
    "neither",
    "both",
    "either",
    "cannot",
    "can't",
    "can not",
    "could not",
    "couldn't",
    "could be",
    "might be",
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
    "none of",
    "no puedo",
    "ninguno",
    "ninguna",
    "kann nicht",
    "kann das nicht",
    "weder",
    "ne peux pas",
    "aucun",
    "n/a",
)


@dataclass(frozen=True)
class _Patterns:
    """The letter-dependent regular expressions of one protocol's :class:`ParserRules`."""

    letters: tuple[Letter, ...]
    paren: re.Pattern[str]
    unclosed: re.Pattern[str]
    leading: re.Pattern[str]
    after_word: re.Pattern[str]
    mid: re.Pattern[str]
    markers: re.Pattern[str]
    weak: re.Pattern[str]


@functools.lru_cache(maxsize=8)
def patterns(rules: ParserRules) -> _Patterns:
    """Compile the parser's patterns for the protocol's letters (cached per rules)."""
    cls = "[" + "".join(re.escape(x) for x in rules.letters) + "]"
    mid = "|".join(
        "(" + re.escape(x) + ")" + (_AFTER_MID_WORD if x in rules.word_letters else _AFTER_MID)
        for x in rules.letters
    )
    return _Patterns(
        letters=rules.letters,
        paren=re.compile(r"\(\s*(" + cls + r")\s*\)"),
        unclosed=re.compile(r"\(\s*(" + cls + r")(?=[ \t]*(?:[^\sa-z0-9)]|\n))"),
        leading=re.compile(r"^" + _DECOR + "(" + cls + ")" + _AFTER),
        after_word=re.compile(
            r"\b(?:"
            + _ANSWER_WORDS
            + r")(?:\s+is)?[\"'*_`]*\s*[:\-=]?\s*[*_`\"'\[]*\s*\(?("
            + cls
            + ")"
            + _AFTER
        ),
        mid=re.compile(_NOT_WORD_BEFORE + r"(?:" + mid + r")"),
        # The trailing class confirms the end of the word ("both" vs "bothersome"); a negated
        # letter ("not (a)", "definitely not b.") is a marker too: it does not choose it.
        markers=re.compile(
            r"\b(?:" + "|".join(_MARKER_WORDS) + r")(?=[^a-z0-9])"
            r"|\bnot\s+(?:option\s+)?\(?\s*" + cls + _AFTER_MID
        ),
        # An unclosed parenthesised letter followed by a word ("(a Trustworthy") at the start of
        # the response or after an answer word: a *weak* mention (the "(a" could open an aside,
        # "(a photo says little)"). Read only in a finished response with no ")" after it and
        # no hedge/refusal marker anywhere; never part of an early (prefix) verdict.
        weak=re.compile(
            r"(?:^" + _DECOR + r"|\b(?:" + _ANSWER_WORDS + r")(?:\s+is)?\s*[:\-=]?\s*)"
            r"\(\s*(" + cls + r")(?=[ \t]+[^\W\d_])"
        ),
    )


def _rules(rules: ParserRules | None) -> ParserRules:
    return rules if rules is not None else default_parser_rules()


@functools.lru_cache(maxsize=4096)
def _fold_char(c: str) -> str:
    """One character's NFKC form with the homoglyph map applied (full-width and CJK forms:
    ``Ａ`` -> ``A``, ``（`` -> ``(``, ``：`` -> ``:``; Cyrillic ``а`` -> ``a``)."""
    return unicodedata.normalize("NFKC", c).translate(_HOMOGLYPHS)


def fold(text: str) -> str:
    """NFKC normalisation and the homoglyph map, character by character.

    Per character (no composition across characters), so the folded form of a prefix is a prefix
    of the folded text: prefix decidability survives. ASCII text is returned as it is.
    """
    if text.isascii():
        return text
    return "".join(_fold_char(c) for c in text)


def split_reasoning(text: str) -> tuple[str, str | None]:
    """``(reasoning, answer)`` of a response that opens with a reasoning block.

    A response that starts (after white space) with ``<think>`` (or ``<thinking>``,
    ``<reasoning>``) carries its answer after the matching closing tag; ``answer`` is None while
    the block is open (a response cut off in its reasoning has no answer). Any other response is
    all answer: ``("", text)``. A served model's separate ``reasoning_content`` field never
    reaches the parser: the answer is the message's ``content``.
    """
    head = text.lstrip()
    low = head[:16].lower()
    for tag in _REASONING_TAGS:
        opening = f"<{tag}>"
        if low.startswith(opening):
            close = head.lower().find(f"</{tag}>", len(opening))
            if close == -1:
                return head[len(opening) :], None
            return head[len(opening) : close], head[close + len(tag) + 3 :]
    return "", text


def _reasoning_pending(t: str) -> bool:
    """True if ``t`` (lower-cased, stripped) may still become the opening of a reasoning tag."""
    return any(f"<{tag}>".startswith(t) for tag in _REASONING_TAGS) and t != ""


def _normalise(text: str, finished: bool) -> str | None:
    """Fold, lower-case, unify quotes, drop a leading reasoning block; append the end sentinel
    when the text is finished. None: nothing can be read yet (inside a reasoning block).

    A finished response whose reasoning block never closed reads as the empty answer (invalid).
    """
    t = fold(text).replace("\u2019", "'").replace("\u2018", "'").lower()
    t = t.replace("\u201c", '"').replace("\u201d", '"')
    t = t.lstrip()
    if t.startswith("<"):
        if not finished and _reasoning_pending(t):
            return None
        _, answer = split_reasoning(t)
        if answer is None:
            return _END if finished else None
        t = answer.lstrip()
    if finished:  # no rstrip: the finished text must extend the unfinished one (monotonicity)
        t = t + _END
    return t


def _mentions(t: str, pt: _Patterns) -> list[tuple[int, str]]:
    """Confirmed letter mentions as (position of the letter, letter)."""
    found = [(m.start(1), m.group(1)) for m in pt.paren.finditer(t)]
    found += [(m.start(1), m.group(1)) for m in pt.unclosed.finditer(t)]
    lead = pt.leading.match(t)
    if lead:
        found.append((lead.start(1), lead.group(1)))
    found += [(m.start(1), m.group(1)) for m in pt.after_word.finditer(t)]
    found += [(m.start(), next(g for g in m.groups() if g)) for m in pt.mid.finditer(t)]
    return found


def _verdict(t: str | None, pt: _Patterns) -> Letter | Literal["invalid"] | None:
    """Verdict from the confirmed evidence in ``t``; None when nothing is fixed yet."""
    if t is None:
        return None
    mentions = _mentions(t, pt)
    weak = []
    if t.endswith(_END):
        weak = [(m.start(1), m.group(1)) for m in pt.weak.finditer(t) if ")" not in t[m.end() :]]
    letters = {x for _, x in mentions + weak}
    if len(letters) >= 2:
        return "invalid"
    marker = pt.markers.search(t)
    if marker and (not mentions or weak or marker.start() < min(p for p, _ in mentions)):
        return "invalid"
    if t.endswith(_END):
        return letters.pop() if len(letters) == 1 else "invalid"
    return None


def parse_response(text: str | None, rules: ParserRules | None = None) -> Letter | None:
    """The letter a finished response chose, or None if it is invalid (App. C.2, ``paper``).

    ``rules``: the protocol's parser rules (``Benchmark.parser``); None reads the default
    protocol's (``conf/benchmark/stylisticbias.yaml``).
    """
    if text is None:
        return None
    r = _rules(rules)
    v = _verdict(_normalise(text, finished=True), patterns(r))
    return v if v in r.letters else None


#: Every single-character label, to name an answer outside a task's labels.
_ANY_LABEL = ParserRules(
    letters=tuple("abcdefghijklmnopqrstuvwxyz0123456789"), word_letters=("a", "i")
)


def explain_invalid(text: str | None, rules: ParserRules | None = None) -> str:
    """One line saying why :func:`parse_response` reads ``text`` as invalid under ``rules``
    (empty, a hedge or refusal, several labels, a label outside the protocol's, none)."""
    if text is None or not text.strip():
        return "empty response"
    r = _rules(rules)
    t = _normalise(text, finished=True)
    pt = patterns(r)
    mentions = _mentions(t, pt)
    found = sorted({x for _, x in mentions})
    if len(found) >= 2:
        return "several labels: " + ", ".join(f"({x})" for x in found)
    marker = pt.markers.search(t)
    if marker is not None:
        return f"hedged or refused ({marker.group(0).strip()!r})"
    other = sorted({x for _, x in _mentions(t, patterns(_ANY_LABEL))} - set(r.letters))
    if other:
        return f"label {other[0]!r} outside the labels " + ", ".join(f"({x})" for x in r.letters)
    return "no label of " + ", ".join(f"({x})" for x in r.letters)


def letter_outcome(letter: Letter | None, ordering: Ordering) -> Outcome:
    """Map a parsed letter to the pole it stands for under ``ordering``."""
    if letter is None:
        return "invalid"
    return ordering.pole_of(letter)


def classify(text: str | None, ordering: Ordering, rules: ParserRules | None = None) -> Outcome:
    """``positive`` / ``negative`` / ``invalid`` for a finished response under ``ordering``."""
    return letter_outcome(parse_response(text, rules), ordering)


def decide_prefix(
    text: str, finished: bool, rules: ParserRules | None = None
) -> Letter | Literal["invalid"] | None:
    """The parse verdict if it is already fixed whatever text follows ``text``; else None.

    ``finished=True`` (EOS or the token limit) always returns the final verdict
    (a letter of the protocol or ``"invalid"``). On an unfinished prefix only ``"invalid"`` can
    be decided early (a hedge/refusal marker or both letters are already confirmed).
    """
    v = _verdict(_normalise(text, finished), patterns(_rules(rules)))
    if finished:
        return v if v is not None else "invalid"
    return v
