"""The paper's released code's reading of a forced-choice response (``judge.parser: official``).

It follows ``parse_choice`` in ``judgement/judgement_pipeline.py`` of
``timo-cavelius/StylisticBias`` step by step (:func:`parse_official`); the ``paper`` reader
(App. C.2 as written) is :mod:`~stylisticbias.judge.protocol.parsing`.
"""

from __future__ import annotations

import functools
import re

from stylisticbias.benchmark import Letter, Ordering, ParserRules, default_parser_rules
from stylisticbias.judge.protocol.parsing import Outcome, letter_outcome


@functools.lru_cache(maxsize=8)
def _open_letter(rules: ParserRules) -> re.Pattern[str]:
    """``(a`` / ``(b`` not followed by a letter or digit (cached per rules)."""
    cls = "[" + "".join(re.escape(x) for x in rules.letters) + "]"
    return re.compile(r"\((" + cls + r")(?=[^a-z0-9]|$)")


def parse_official(
    text: str | None, option_a: str, option_b: str, rules: ParserRules | None = None
) -> Letter | None:
    """The paper's released code's reading of a response (``parser: official``).

    Follows ``parse_choice`` of the paper's public repository (``timo-cavelius/StylisticBias``,
    ``judgement/judgement_pipeline.py``), step by step, first hit wins; ``option_a``/``option_b``
    are the pole texts the prompt showed as the protocol's first/second letter, (a)/(b):

    1. lower-case; keep only what follows ``[/inst]`` if present;
    2. the *last* ``(a`` / ``(b`` not followed by a letter or digit;
    3. the *last* of ``(a)``, ``a)``, ``(b)``, ``b)``;
    4. ``option a`` present and ``option b`` absent (or the reverse);
    5. ``a`` as a whitespace-separated token (after replacing ``.``/``,``) and no ``b`` token
       (or the reverse);
    6. one option's text present and the other's absent;
    7. the first ``a``/``b`` character anywhere in the response (any word).

    Otherwise unparsed (None; the paper's code records ``unknown`` and counts it in phi's
    denominator). Steps 2, 3 and 7 read both-letter answers as one letter and step 7 reads
    almost any text as a choice. The letters are the protocol's (``rules``).
    """
    if text is None:
        return None
    r = rules if rules is not None else default_parser_rules()
    la, lb = r.letters
    original = text.strip()
    t = original.lower()
    if "[/inst]" in t:
        t = t.split("[/inst]", 1)[1].strip()
    opened = list(_open_letter(r).finditer(t))
    if opened:
        return opened[-1].group(1)
    best: tuple[int, str] | None = None
    for letter, tok in ((la, f"({la})"), (la, f"{la})"), (lb, f"({lb})"), (lb, f"{lb})")):
        i = t.rfind(tok)
        if i != -1 and (best is None or i > best[0]):
            best = (i, letter)
    if best is not None:
        return best[1]
    if f"option {la}" in t and f"option {lb}" not in t:
        return la
    if f"option {lb}" in t and f"option {la}" not in t:
        return lb
    tokens = set(t.replace(".", " ").replace(",", " ").split())
    if la in tokens and lb not in tokens:
        return la
    if lb in tokens and la not in tokens:
        return lb
    oa, ob = option_a.lower(), option_b.lower()
    if oa in t and ob not in t:
        return la
    if ob in t and oa not in t:
        return lb
    first = re.search("[" + re.escape(la + lb) + "]", original, flags=re.IGNORECASE)
    if first:
        return la if first.group(0).lower() == la else lb
    return None


def classify_official(
    text: str | None,
    ordering: Ordering,
    option_a: str,
    option_b: str,
    rules: ParserRules | None = None,
) -> Outcome:
    """``positive`` / ``negative`` / ``invalid`` under ``parser: official`` (see
    :func:`parse_official`; ``option_a``/``option_b`` are the texts shown as the first/second
    letter)."""
    return letter_outcome(parse_official(text, option_a, option_b, rules), ordering)
