"""Exact answer distributions from a server's next-token log-probabilities.

The same expansion rule as the ``hf`` engine (:mod:`stylisticbias.judge.engines.hf.exact`),
over text instead of token ids: a node is a partial answer; its children are the server's
``top_logprobs`` tokens after it (one request with ``max_tokens: 1``; deeper nodes continue the
partial answer with assistant prefill, ``continue_final_message`` on vLLM/SGLang). A child ends
at an end-of-sequence token or at ``max_new_tokens`` (its text is parsed), or earlier when
:func:`~stylisticbias.judge.protocol.parsing.decide_prefix` fixes the verdict; children below
``prune_threshold`` and branches beyond ``max_branches_per_suffix`` are *undecided* mass.

Tempering. vLLM returns untempered log-probabilities by default (``raw``); the engine applies
the temperature itself: ``q_t = exp(l_t / T) / Z``. Only the top-k tokens are known, so the
tail's tempered mass is bounded from the untempered tail ``r = 1 - sum_k exp(l_t)``: for
``T <= 1`` every tail token has ``l <= l_min`` and ``sum_tail exp(l/T) <= r exp(l_min (1/T-1))``;
for ``T > 1`` Hölder gives ``r^(1/T) V^(1-1/T)`` (``V``: vocabulary size). That bound is added to
``Z`` and recorded as undecided mass, so ``p_pos + p_neg + p_invalid + p_undecided = 1`` and the
known probabilities are never overstated. With ``logprobs_mode: processed`` the server has
already tempered them and the tail is ``1 - sum_k exp(l_t)``.

Differences from in-process ``hf`` exact (stated, not hidden): the server re-tokenises the
partial answer text (a token path ``o``,``r`` may come back as one token ``or``), and top-k
truncation; both move little mass for a forced-choice answer (see the agreement test).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from stylisticbias.benchmark import ParserRules, default_parser_rules
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.distribution import Distribution
from stylisticbias.judge.protocol.parsing import decide_prefix


@dataclass(frozen=True)
class ExactSettings:
    """Settings of the expansion (the ``hf`` engine's names)."""

    temperature: float
    max_new_tokens: int
    prune_threshold: float = 1e-4
    max_branches_per_suffix: int = 64
    top_logprobs: int = 20
    logprobs_mode: str = "raw"
    eos_tokens: tuple[str, ...] = ("</s>",)
    vocab_size: int = 262144
    parser: ParserRules | None = None  # the protocol's (Benchmark.parser); None: the paper's
    # another reader in place of the letter parser (``Decoding.decide`` of the hf engine):
    # ``decide(text, finished)`` -> one of ``labels``, "invalid" or None (unfinished text)
    decide: Callable[..., str | None] | None = None
    labels: tuple[str, ...] | None = None


@dataclass
class TextDistribution(Distribution):
    """:class:`~stylisticbias.judge.protocol.distribution.Distribution` of one prompt, plus the
    server's refusals and the number of requests it took."""

    refusals: list[str] = field(default_factory=list)
    requests: int = 0


def temper(
    top: Sequence[Sequence[Any]], settings: ExactSettings
) -> tuple[list[tuple[str, float]], float]:
    """(token, probability) at the configured temperature, and the bound on the unseen tail."""
    if not top:
        return [], 1.0
    toks = [str(t) for t, _ in top]
    lps = [float(lp) for _, lp in top]
    if settings.logprobs_mode == "processed":
        probs = [math.exp(lp) for lp in lps]
        return list(zip(toks, probs)), max(0.0, 1.0 - sum(probs))
    t = float(settings.temperature)
    if t <= 0:
        raise StylisticBiasError("exact decoding needs judge.temperature > 0")
    lmax, lmin = max(lps), min(lps)
    w = [math.exp((lp - lmax) / t) for lp in lps]
    r = max(0.0, 1.0 - sum(math.exp(lp) for lp in lps))
    if r <= 0:
        tail = 0.0
    elif t <= 1.0:
        tail = r * math.exp(lmin * (1.0 / t - 1.0) - lmax / t)
    else:
        tail = r ** (1.0 / t) * settings.vocab_size ** (1.0 - 1.0 / t) * math.exp(-lmax / t)
    z = sum(w) + tail
    return [(tok, wi / z) for tok, wi in zip(toks, w)], tail / z


def _clean_prefix(text: str) -> str:
    """Drop an undecodable tail (a partial UTF-8 sequence shows as U+FFFD)."""
    i = text.find("\ufffd")
    return text if i < 0 else text[:i]


@dataclass
class _Node:
    owner: int
    text: str
    p: float
    n_tokens: int


Fetch = Callable[[int, str], Awaitable[dict[str, Any]]]


async def expand_texts(
    n_prompts: int, fetch: Fetch, settings: ExactSettings, gather: Callable[..., Awaitable[Any]]
) -> list[TextDistribution]:
    """Exact verdict distributions of ``n_prompts`` prompts of one image.

    ``fetch(k, prefix)`` returns the normalised result (see ``transport.normalise``) of the
    next-token request of prompt ``k`` after the partial answer ``prefix``; all nodes of one
    depth are fetched concurrently (``gather``, e.g. ``asyncio.gather``).
    """
    rules = settings.parser or default_parser_rules()
    decide = settings.decide or partial(decide_prefix, rules=rules)
    labels = settings.labels or rules.letters
    dists = [TextDistribution(mass={**{x: 0.0 for x in labels}, "invalid": 0.0})
             for _ in range(n_prompts)]  # fmt: skip
    live = [_Node(k, "", 1.0, 0) for k in range(n_prompts)]
    thr = float(settings.prune_threshold)
    while live:
        results = await gather(*(fetch(n.owner, n.text) for n in live))
        new: list[_Node] = []
        for node, res in zip(live, results):
            d = dists[node.owner]
            d.requests += 1
            if res.get("refusal"):
                d.refusals.append(str(res["refusal"]))
                d.add("invalid", node.p, f"[refused: {res['refusal']}]")
                continue
            top = res.get("top_logprobs")
            if top is None:
                raise StylisticBiasError(
                    "the server returned no log-probabilities for an exact request; set "
                    "endpoint.capabilities.logprobs: false in the model file (and "
                    "engine.exact_fallback: generate to judge with the literal protocol)"
                )
            probs, tail = temper(top, settings)
            d.undecided += node.p * tail
            for tok, q in probs:
                p = node.p * q
                if p < thr:
                    d.undecided += p
                    continue
                if tok in settings.eos_tokens:
                    d.add(str(decide(node.text, finished=True)), p, node.text)
                    continue
                text = node.text + tok
                n = node.n_tokens + 1
                if n >= settings.max_new_tokens:
                    d.add(str(decide(text, finished=True)), p, text)
                    continue
                v = decide(_clean_prefix(text), finished=False)
                if v is not None:
                    d.add(str(v), p, text)
                    continue
                new.append(_Node(node.owner, text, p, n))
        live = _cap(new, dists, max(1, int(settings.max_branches_per_suffix)))
    return dists


def _cap(nodes: list[_Node], dists: list[TextDistribution], cap: int) -> list[_Node]:
    """Keep each prompt's ``cap`` most probable live branches; the rest is undecided."""
    by_owner: dict[int, list[_Node]] = {}
    for n in nodes:
        by_owner.setdefault(n.owner, []).append(n)
    out: list[_Node] = []
    for owner, ns in by_owner.items():
        ns.sort(key=lambda n: (-n.p, n.text))
        out.extend(ns[:cap])
        for n in ns[cap:]:
            dists[owner].undecided += n.p
    return out
