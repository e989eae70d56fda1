"""Exact answer distributions of categorical and yes/no questions (the ``hf`` and ``openai``
annotators with ``exact: true``).

The reply is prefilled with :data:`PREFILL` (``{"answer": "``, the assistant turn's start) and
the engine expands every continuation the model can give, token by token, as the judge's exact
decoders do (``judge/engines/hf/exact.py``, ``judge/engines/openai/exact.py``): a branch ends at
an end-of-sequence token or at ``max_new_tokens`` and the *finished* reply (prefill + branch) is
read by :func:`~.questions.validate_reply` -- the same validator as a sampled reply, so a branch
counts for an option exactly when that reply would be a valid answer with that option. No branch
is decided early (the validator reads a whole reply), so the distribution is exact up to the
pruning rule: children below ``prune_threshold`` and branches beyond ``max_branches_per_suffix``
are *undecided* mass, as is, through the ``openai`` engine, the mass the server's top
log-probabilities do not show (the unseen-mass bound of ``openai/exact.py``'s ``temper``).

:func:`answer_probs` turns a distribution into the ``probs`` of an ANNOTATIONS row: one entry per
answer of the question plus ``(invalid)`` and ``(undecided)``, summing to 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stylisticbias.annotate.questions import Question, validate_reply

#: the start of every reply the exact expansion continues
PREFILL = '{"answer": "'
#: the keys of the mass no answer of the question holds
INVALID, UNDECIDED = "(invalid)", "(undecided)"


def exact_question(q: Question) -> bool:
    """Whether ``q`` has a distribution over answers (categorical and yes/no questions)."""
    return bool(q.choices)


def answer_decider(q: Question, prefill: str = PREFILL) -> Callable[..., str | None]:
    """``decide(text, finished)``: the answer a finished reply ``prefill + text`` validates to
    (one of ``q.choices``) or ``"invalid"``; None for unfinished text (never decided early)."""

    def decide(text: str, finished: bool) -> str | None:
        if not finished:
            return None
        answer, valid, _ = validate_reply(q, prefill + text)
        return str(answer) if valid else "invalid"

    return decide


def answer_probs(mass: Mapping[str, float], undecided: float) -> dict[str, float]:
    """``probs`` of a row: each answer's mass, ``(invalid)`` and ``(undecided)``, rescaled to
    sum exactly to 1 (removes float drift)."""
    raw = {k: float(v) for k, v in mass.items() if k != "invalid"}
    raw[INVALID] = float(mass.get("invalid", 0.0))
    raw[UNDECIDED] = float(undecided)
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()} if total > 0 else {**raw, UNDECIDED: 1.0}


def modal_reply(dist: Any, prefill: str = PREFILL) -> str | None:
    """The reply of the verdict with the most mass: its most probable branch (prefill + text);
    None when no branch was decided (all mass pruned)."""
    decided = [v for v in dist.best if v in dist.mass]
    if not decided:
        return None
    top = max(sorted(decided), key=lambda v: dist.mass[v])
    return prefill + dist.best[top][1]


def exact_fields(dist: Any, prefill: str = PREFILL) -> dict[str, Any]:
    """``content`` and ``probs`` of a row from an exact distribution (``mass``, ``undecided``,
    ``best``): the content is the most probable verdict's reply, validated as any reply."""
    return {"content": modal_reply(dist, prefill), "probs": answer_probs(dist.mass, dist.undecided)}
