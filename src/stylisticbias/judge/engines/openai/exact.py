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
from collections.abc import Awaitable, Callable, Mapping, Sequence
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
    #: stop asking about a prompt once the live mass not yet asked about is at most this
    undecided_target: float = 0.0
    #: answer paths per request (``n``) and tokens per path (``max_tokens``); 1 and 1: one
    #: next-token list per request
    paths_per_request: int = 1
    path_tokens: int = 1
    #: sampling temperature of the paths (raw log-probabilities only; None: ``temperature``)
    explore_temperature: float | None = None

    @property
    def request_paths(self) -> int:
        """``n`` of a log-probability request: the answer paths it asks for (0: one token)."""
        return self.paths_per_request if self.path_tokens > 1 else 0

    #: another reader in place of the letter parser (``Decoding.decide`` of the hf engine):
    #: ``decide(text, finished)`` -> one of ``labels``, "invalid" or None (unfinished text)
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


Fetch = Callable[[int, str], Awaitable[dict[str, Any]]]
#: ``fetch_batch(k, prefixes)``: one request about several partial answers of prompt ``k``,
#: answered as one normalised result per partial answer
FetchBatch = Callable[[int, Sequence[str]], Awaitable[list[dict[str, Any]]]]


def _known_from(res: Mapping[str, Any], prefix: str, eos: tuple[str, ...]) -> list[tuple[str, Any]]:
    """(partial answer, top list) of every position a response shows, starting at ``prefix``.

    A path response (``paths``: one list of ``[token, top_logprobs]`` per returned choice) shows
    the next-token list after ``prefix`` and after each partial answer its sampled tokens
    spell; a one-token response shows only the first (``top_logprobs``).
    """
    paths = res.get("paths")
    if not paths:
        return [(prefix, res.get("top_logprobs"))]
    out: list[tuple[str, Any]] = []
    for path in paths:
        text = prefix
        for tok, top in path:
            out.append((text, top))
            if tok in eos:
                break
            text += str(tok)
    return out


@dataclass
class _Frontier:
    text: str
    p: float


def split_batch(res: Mapping[str, Any], n: int) -> list[dict[str, Any]]:
    """The per-conversation results of a batched response (choice ``i``: conversation ``i``)."""
    paths = res.get("paths") or []
    if len(paths) != n:
        raise StylisticBiasError(
            f"a batched request about {n} partial answers came back with {len(paths)} choices; "
            "set endpoint.capabilities.batch_chat: false in the model file"
        )
    refusals = res.get("choice_refusals") or [None] * n
    return [
        {"paths": [p], "top_logprobs": p[0][1] if p else None, "refusal": r}
        for p, r in zip(paths, refusals)
    ]


def _by_prompt(todo: list[tuple[int, str]]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for k, text in todo:
        out.setdefault(k, []).append(text)
    return out


async def _one(fetch: Fetch, k: int, text: str) -> list[dict[str, Any]]:
    return [await fetch(k, text)]


def _walk(
    known: Mapping[str, Any],
    dropped: set[str],
    d: TextDistribution,
    settings: ExactSettings,
    decide: Callable[..., str | None],
) -> list[_Frontier]:
    """Recompute ``d`` from the tree known so far; the live nodes not yet asked about.

    Depth-first from the empty answer: a known node's children are its tempered top-k tokens
    (the unseen tail's bound is undecided); a child ends at EOS or at ``max_new_tokens`` (its
    text read by ``decide``: :func:`decide_prefix` with the protocol's rules, or
    ``settings.decide``), or earlier when ``decide`` fixes the verdict; a child below
    ``prune_threshold`` is undecided; any other child is a frontier node (unknown yet) unless
    it was ``dropped`` (beyond the branch cap: undecided).
    """
    d.mass = {k: 0.0 for k in d.mass}
    d.undecided = 0.0
    d.best = {}
    thr = float(settings.prune_threshold)
    frontier: list[_Frontier] = []
    stack: list[tuple[str, float, int]] = [("", 1.0, 0)]
    while stack:
        text, p, n = stack.pop()
        entry = known.get(text)
        if entry is None:
            if text in dropped:
                d.undecided += p
            else:
                frontier.append(_Frontier(text, p))
            continue
        if isinstance(entry, str):  # the server refused at this node
            d.add("invalid", p, f"[refused: {entry}]")
            continue
        probs, tail = entry
        d.undecided += p * tail
        for tok, q in probs:
            pc = p * q
            if pc < thr:
                d.undecided += pc
                continue
            if tok in settings.eos_tokens:
                d.add(str(decide(text, finished=True)), pc, text)
                continue
            child = text + tok
            if n + 1 >= settings.max_new_tokens:
                d.add(str(decide(child, finished=True)), pc, child)
                continue
            v = decide(_clean_prefix(child), finished=False)
            if v is not None:
                d.add(str(v), pc, child)
                continue
            stack.append((child, pc, n + 1))
    return frontier


def _to_ask(
    frontier: list[_Frontier], settings: ExactSettings, undecided: float
) -> tuple[list[_Frontier], list[_Frontier]]:
    """The frontier nodes to ask next -- the fewest most probable ones that bring the mass left
    unasked plus the ``undecided`` mass already pruned to ``undecided_target`` or below -- and
    those beyond ``max_branches_per_suffix`` of them (dropped: their mass is undecided)."""
    frontier = sorted(frontier, key=lambda f: (-f.p, f.text))
    left = sum(f.p for f in frontier)
    target = float(settings.undecided_target) - undecided
    want: list[_Frontier] = []
    for f in frontier:
        if left <= target:
            break
        want.append(f)
        left -= f.p
    cap = max(1, int(settings.max_branches_per_suffix))
    return want[:cap], want[cap:]


async def expand_texts(
    n_prompts: int,
    fetch: Fetch,
    settings: ExactSettings,
    gather: Callable[..., Awaitable[Any]],
    fetch_batch: FetchBatch | None = None,
) -> list[TextDistribution]:
    """Exact verdict distributions of ``n_prompts`` prompts of one image.

    ``fetch(k, prefix)`` returns the normalised result (see ``transport.normalise``) of prompt
    ``k``'s log-probability request after the partial answer ``prefix``: one position
    (``top_logprobs``) or whole answer paths (``paths``, several per request with ``n``), each
    position's list recorded as a known node. Rounds: every prompt's tree is walked
    (:func:`_walk`); the live nodes not yet known are asked about, most probable first, until
    the mass left unasked is at most ``undecided_target`` (that mass is undecided); all
    requests of one round go out concurrently (``gather``, e.g. ``asyncio.gather``). With
    ``fetch_batch`` the partial answers a prompt needs in one round go out as one request
    (the first round's empty answer always alone).
    """
    rules = settings.parser or default_parser_rules()
    decide = settings.decide or partial(decide_prefix, rules=rules)
    labels = settings.labels or rules.letters
    dists = [
        TextDistribution(mass={**{x: 0.0 for x in labels}, "invalid": 0.0})
        for _ in range(n_prompts)
    ]
    known: list[dict[str, Any]] = [{} for _ in range(n_prompts)]
    asked: list[set[str]] = [set() for _ in range(n_prompts)]
    dropped: list[set[str]] = [set() for _ in range(n_prompts)]
    todo: list[tuple[int, str]] = [(k, "") for k in range(n_prompts)]
    while todo:
        calls, asks = [], []
        for k, texts in _by_prompt(todo).items():
            if fetch_batch is not None and len(texts) > 1 and all(texts):
                calls.append(fetch_batch(k, texts))
                asks.append((k, texts))
            else:
                calls.extend(_one(fetch, k, t) for t in texts)
                asks.extend((k, [t]) for t in texts)
        answered = await gather(*calls)
        results = [(k, t, r) for (k, ts), rs in zip(asks, answered) for t, r in zip(ts, rs)]
        for k, _ in asks:
            dists[k].requests += 1
        for k, text, res in results:
            d = dists[k]
            asked[k].add(text)
            if res.get("refusal"):
                d.refusals.append(str(res["refusal"]))
                known[k].setdefault(text, str(res["refusal"]))
                continue
            for at, top in _known_from(res, text, settings.eos_tokens):
                if top is None:
                    raise StylisticBiasError(
                        "the server returned no log-probabilities for an exact request; set "
                        "endpoint.capabilities.logprobs: false in the model file (and "
                        "engine.exact_fallback: generate to judge with the literal protocol)"
                    )
                if at not in known[k]:
                    known[k][at] = temper(top, settings)
        todo = []
        for k in range(n_prompts):
            frontier = _walk(known[k], dropped[k], dists[k], settings, decide)
            ask, beyond = _to_ask(frontier, settings, dists[k].undecided)
            ask = [f for f in ask if f.text not in asked[k]]
            if not ask:  # done: what is left unasked is undecided
                dropped[k].update(f.text for f in frontier)
                _walk(known[k], dropped[k], dists[k], settings, decide)
                continue
            dropped[k].update(f.text for f in beyond)
            todo.extend((k, f.text) for f in ask)
    return dists
