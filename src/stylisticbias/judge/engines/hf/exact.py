"""Exact answer distributions with a shared image prefix (transformers, no sampling).

For one image, the 100 (scenario x ordering) prompts share a long token prefix: the chat
preamble, the image tokens and the start of Fig. 12 (up to the first option letter). That
prefix is run **once**; its KV cache (a transformers ``DynamicCache``) is shared by all rows of a
suffix batch (:mod:`~stylisticbias.judge.engines.hf.shared_prefix`; or copied row-wise, the fallback
``prefix_sharing: copy``); the suffixes run on top of it, and the distribution over *parsed
outcomes* is computed exactly by expanding the response tree token by token:

* every live branch (a partial response) gets its next-token distribution from the model,
  processed by **the same logits processors ``generate()`` builds** from the model's
  ``generation_config`` merged with ours (temperature, top-k/top-p, repetition penalty,
  suppressed tokens, ...) and soft-maxed in float32 as ``generate`` does;
* a child ends at EOS or at ``max_new_tokens`` (its decoded text is parsed), or earlier when
  :func:`~stylisticbias.judge.protocol.parsing.decide_prefix` already fixes the verdict;
* children below ``prune_threshold`` probability are not expanded: their mass is reported as
  ``undecided`` (never dropped), so ``sum(masses) + undecided == 1``.

All suffixes of an image run as **one left-padded batch** (:func:`expand`): pad slots sit
between the prefix and each shorter suffix, are masked out of attention, and every row keeps
the positions (RoPE / M-RoPE offsets) of its unpadded prompt, so rows end at the same slot and
each expansion depth is one forward for all branches. Forward calls per image: 1 (prefix) + 1
(suffixes) + depth. (``padding=False`` groups suffixes by token length instead, the previous
engine's layout: no padding at all, forward calls = groups x depth.)
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from stylisticbias.benchmark import default_parser_rules
from stylisticbias.judge.engines.hf import compat as hf_compat
from stylisticbias.judge.engines.hf.generation import (
    Decoding,
    decode_response,
    generation_setup,
    logits_processors,
    padding_allowed,
)
from stylisticbias.judge.engines.hf.prefix_cache import (
    cache_cat,
    cache_repeat,
    cache_select,
    forward_context,
    mrope_deltas,
)
from stylisticbias.judge.engines.hf.prompts import ImagePrompts
from stylisticbias.judge.protocol.distribution import Distribution
from stylisticbias.judge.protocol.parsing import decide_prefix

log = logging.getLogger(__name__)

Verdict = str  # "a" | "b" | "invalid"


# ---------------------------------------------------------------------------------------------
# forward passes on a prefix cache (the cache itself: :mod:`.prefix_cache`)
# ---------------------------------------------------------------------------------------------


def _restore_rope_deltas(model: Any, cache: Any) -> None:
    """Put back the M-RoPE offsets :func:`prefill` recorded for ``cache``'s image (Qwen-VL).

    Qwen2/2.5/3-VL keep ``rope_deltas`` (text position offset after the image grid) as *model*
    state, overwritten by every forward that starts at position 0 (another image's prefill, a
    ``generate`` call); suffix positions on top of a prefix cache must use that prefix's offsets.
    """
    deltas = mrope_deltas(cache)
    if deltas is not None:
        hf_compat.set_rope_deltas(model, deltas)


def _forward(
    model: Any, ids: Any, cache: Any, attention_mask: Any = None, positions: Any = None
) -> Any:
    """Run ``ids`` ([B, S]) on top of ``cache`` (updated in place); float32 last-token logits.

    ``attention_mask`` ([B, cache length + S], 0 on padding) and ``positions`` ([B, S] text
    positions) are given for a left-padded batch (see :func:`expand`); M-RoPE models get
    ``positions`` + the prefix's ``rope_deltas`` on all three axes, as their own forward
    computes them for unpadded text after the image.
    """
    _restore_rope_deltas(model, cache)
    kw: dict[str, Any] = {"past_key_values": cache, "use_cache": True, "logits_to_keep": 1}
    if attention_mask is not None:
        kw["attention_mask"] = attention_mask
    if positions is not None:
        deltas = mrope_deltas(cache)
        if deltas is not None:
            pos = positions + deltas.to(positions.device)
            kw["position_ids"] = pos[None].expand(3, *pos.shape)
        else:
            kw["position_ids"] = positions
    with forward_context(cache, model):
        out = model(input_ids=ids, **kw)
    return out.logits[:, -1].float()


def prefill(model: Any, prefix_inputs: Mapping[str, Any]) -> Any:
    """Run the image prefix once (batch 1); returns its KV cache."""
    inputs = {k: v.to(model.device) if hasattr(v, "to") else v for k, v in prefix_inputs.items()}
    if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
        inputs["pixel_values"] = inputs["pixel_values"].to(model.dtype)
    out = model(**inputs, use_cache=True, logits_to_keep=1)
    cache = out.past_key_values
    deltas = hf_compat.rope_deltas(model)
    if deltas is not None:  # M-RoPE models: this image's offsets, see _restore_rope_deltas
        cache.mrope_deltas = deltas
    return cache


def suffix_logits(model: Any, prefix_cache: Any, suffixes: Sequence[Sequence[int]]) -> Any:
    """Last-token float32 logits of equal-length ``suffixes`` run on the shared prefix."""
    import torch

    lengths = {len(s) for s in suffixes}
    if len(lengths) != 1:
        raise ValueError(
            f"suffix_logits needs equal-length suffixes, got lengths {sorted(lengths)}"
        )
    ids = torch.tensor([list(s) for s in suffixes], device=model.device)
    return _forward(model, ids, cache_repeat(prefix_cache, len(suffixes)))


# ---------------------------------------------------------------------------------------------
# exact expansion
# ---------------------------------------------------------------------------------------------


@dataclass
class ExpandStats:
    """Counters and per-phase wall time of expansions (for logging, profiling, the benchmark).

    ``phase_s``: seconds by phase -- ``suffix`` (the suffix forward), ``step<d>`` (the forward
    calls of expansion depth ``d``), ``host`` (logits processing, softmax, pruning, parsing and
    cache bookkeeping between forwards); the engine adds ``preprocess`` and ``prefill``.
    ``calls``: ``(phase, rows, query tokens)`` of every forward, in order. ``sync``: called
    before each clock read (``torch.cuda.synchronize`` when profiling a GPU; ``None`` leaves
    the device asynchronous, so GPU phase times are then only launch times).
    """

    forward_calls: int = 0
    branch_rows: int = 0
    max_depth: int = 0
    capped_mass: float = 0.0  # probability moved to undecided by ``max_branches_per_suffix``
    host_syncs: int = 0  # device -> host transfers the expansion needed (2 per depth)
    phase_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls: list[tuple[str, int, int]] = field(default_factory=list)
    sync: Callable[[], None] | None = None

    def clock(self) -> float:
        """``time.perf_counter()`` after ``sync`` (if set)."""
        if self.sync is not None:
            self.sync()
        return time.perf_counter()

    def add(self, phase: str, since: float) -> float:
        """Add the time since ``since`` to ``phase``; returns the new clock reading."""
        now = self.clock()
        self.phase_s[phase] += now - since
        return now


def _clean_prefix(text: str) -> str:
    """Drop an undecodable tail (a partial UTF-8 sequence decodes to U+FFFD)."""
    i = text.find("\ufffd")
    return text if i < 0 else text[:i]


def expand(
    model: Any,
    tokenizer: Any,
    prefix_cache: Any,
    prefix_ids: Sequence[int],
    suffixes: Sequence[Sequence[int]],
    decoding: Decoding,
    gen_setup: tuple[Any, set[int]] | None = None,
    stats: ExpandStats | None = None,
) -> list[Distribution]:
    """Exact verdict distributions of ``suffixes`` on the shared prefix, in ONE batch.

    Suffixes of different lengths are **left-padded** between the prefix and the suffix: the
    pad slots are masked out of every attention (``attention_mask`` 0) and each row's tokens
    get the positions (RoPE / M-RoPE) of its unpadded prompt, so every row ends at the same
    slot and the expansion steps of all rows run as one forward per depth (chunked by
    ``branch_batch_size``): forward calls = 1 + depth, whatever the number of distinct suffix
    lengths. Equal-length suffixes run exactly as before (no mask, no positions).

    Per depth the host needs the kept children (parsing is on the host): candidates are found
    on the device in float32 with a safety margin, then tested exactly in float64, so only
    those cross to the host (2 transfers per depth) and the float64 arithmetic of the pruning
    rule is what it was on the full vocabulary.
    """
    import torch

    if not suffixes:
        return []
    stats = stats or ExpandStats()
    gen_cfg, eos = gen_setup or generation_setup(model, decoding)
    dev = model.device
    n = len(suffixes)
    t = stats.clock()
    width = max(len(s) for s in suffixes)
    padded = any(len(s) != width for s in suffixes)
    p_len = len(prefix_ids)
    suffix = torch.tensor(
        [[s[0]] * (width - len(s)) + list(s) for s in suffixes], dtype=torch.long, device=dev
    )
    full = torch.cat([torch.tensor([list(prefix_ids)], device=dev).expand(n, -1), suffix], 1)
    procs = logits_processors(model, gen_cfg, full[:1])
    attn = positions = last_pos = None
    if padded:
        real = torch.tensor(
            [[0] * (width - len(s)) + [1] * len(s) for s in suffixes], dtype=torch.long, device=dev
        )
        attn = torch.cat([torch.ones((n, p_len), dtype=torch.long, device=dev), real], 1)
        positions = (p_len - 1 + real.cumsum(1)).clamp_min(p_len)
        last_pos = positions[:, -1].clone()
    cache = cache_repeat(prefix_cache, n)
    t = stats.add("host", t)
    logits = _forward(model, suffix, cache, attn, positions)
    t = stats.add("suffix", t)
    stats.forward_calls += 1
    stats.branch_rows += n
    stats.calls.append(("suffix", n, width))

    rules = decoding.parser or default_parser_rules()
    decide = decoding.decide or partial(decide_prefix, rules=rules)
    dists = [Distribution.over(decoding.labels or rules.letters) for _ in range(n)]
    owner = list(range(n))
    gens: list[list[int]] = [[] for _ in range(n)]
    branch_p = torch.ones(n, dtype=torch.float64, device=dev)
    thr = float(decoding.prune_threshold)
    depth = 0
    while owner:
        depth += 1
        scores = procs(full, logits)
        probs = torch.softmax(scores, dim=-1)  # float32 softmax, as generate
        # candidates in float32 (a superset: the margin covers float32 rounding of thr / p)
        lim = (thr / branch_p).to(torch.float32) * (1.0 - 1e-5)
        cand = (probs >= lim[:, None]).nonzero()
        ci, ct = cand[:, 0], cand[:, 1]
        child = branch_p[ci] * probs[ci, ct].to(torch.float64)
        keep = child >= thr
        ci, ct, child = ci[keep], ct[keep], child[keep]
        total = branch_p * probs.sum(-1, dtype=torch.float64)
        pruned = total - torch.zeros_like(total).index_add_(0, ci, child)
        host = torch.cat([pruned, child, ci.to(torch.float64), ct.to(torch.float64)]).tolist()
        stats.host_syncs += 2
        m, k = len(owner), len(child)
        for i, mass in enumerate(host[:m]):
            if mass > 0:
                dists[owner[i]].undecided += mass
        vals = host[m : m + k]
        idx = zip((int(x) for x in host[m + k : m + 2 * k]), (int(x) for x in host[m + 2 * k :]))
        rows: list[int] = []
        toks: list[int] = []
        new_owner: list[int] = []
        new_gens: list[list[int]] = []
        new_p: list[float] = []
        for (i, tk), p in zip(idx, vals):
            g = [*gens[i], tk]
            d = dists[owner[i]]
            if tk in eos or len(g) >= decoding.max_new_tokens:
                text = decode_response(tokenizer, g)
                d.add(str(decide(text, finished=True)), p, text)
                continue
            text = decode_response(tokenizer, g)
            v = decide(_clean_prefix(text), finished=False)
            if v is not None:
                d.add(str(v), p, text)
                continue
            rows.append(i)
            toks.append(tk)
            new_owner.append(owner[i])
            new_gens.append(g)
            new_p.append(p)
        cap = max(1, int(decoding.max_branches_per_suffix))
        if len(rows) > cap:  # memory guard, per suffix: keep each one's most probable branches
            per_owner: dict[int, list[int]] = defaultdict(list)
            for j, o in enumerate(new_owner):
                per_owner[o].append(j)
            drop: set[int] = set()
            for js in per_owner.values():
                if len(js) > cap:  # ties broken by the token sequence: deterministic
                    js.sort(key=lambda j: (-new_p[j], new_gens[j]))
                    drop.update(js[cap:])
            if drop:
                for j in drop:
                    dists[new_owner[j]].undecided += new_p[j]
                    stats.capped_mass += new_p[j]
                sel = [j for j in range(len(rows)) if j not in drop]
                rows, toks = [rows[j] for j in sel], [toks[j] for j in sel]
                new_owner, new_gens = [new_owner[j] for j in sel], [new_gens[j] for j in sel]
                new_p = [new_p[j] for j in sel]
        if not rows:
            t = stats.add("host", t)
            break
        r = torch.tensor(rows, dtype=torch.long, device=dev)
        tok = torch.tensor(toks, dtype=torch.long, device=dev)[:, None]
        full = torch.cat([full.index_select(0, r), tok], 1)
        step_pos = None
        if attn is not None and last_pos is not None:
            attn = torch.cat([attn.index_select(0, r), attn.new_ones((len(rows), 1))], 1)
            last_pos = last_pos.index_select(0, r) + 1
            step_pos = last_pos[:, None]
        parts_logits = []
        parts_cache = []
        bs = max(1, int(decoding.branch_batch_size))
        identity = rows == list(range(len(owner))) and len(rows) <= bs
        for s in range(0, len(rows), bs):
            # every branch has exactly one child: keep the cache rows as they are (no copy)
            sub = cache if identity else cache_select(cache, r[s : s + bs])
            t = stats.add("host", t)
            parts_logits.append(
                _forward(
                    model,
                    tok[s : s + bs],
                    sub,
                    None if attn is None else attn[s : s + bs],
                    None if step_pos is None else step_pos[s : s + bs],
                )
            )
            t = stats.add(f"step{depth}", t)
            stats.calls.append((f"step{depth}", len(tok[s : s + bs]), 1))
            parts_cache.append(sub)
            stats.forward_calls += 1
        del cache
        cache = cache_cat(parts_cache)
        logits = torch.cat(parts_logits, 0)
        owner, gens = new_owner, new_gens
        branch_p = torch.tensor(new_p, dtype=torch.float64, device=dev)
        stats.branch_rows += len(rows)
    stats.max_depth = max(stats.max_depth, depth)
    return dists


def expand_all(
    model: Any,
    tokenizer: Any,
    prefix_cache: Any,
    prompts: ImagePrompts,
    decoding: Decoding,
    suffix_batch_size: int,
    stats: ExpandStats | None = None,
    padding: bool = True,
) -> list[Distribution]:
    """:func:`expand` for all suffixes of an image, in chunks of ``suffix_batch_size``.

    ``padding`` (default): suffixes of different lengths share a left-padded batch (sorted by
    length, so a chunk pads as little as possible); ``False`` or an n-gram logits processor
    (:func:`padding_allowed`): one batch per suffix length, as the previous engine did.
    """
    setup = generation_setup(model, decoding)
    bs = max(1, int(suffix_batch_size))
    out: list[Distribution | None] = [None] * len(prompts.suffixes)
    if padding and padding_allowed(model, decoding, setup):
        order = sorted(range(len(prompts.suffixes)), key=lambda k: len(prompts.suffixes[k]))
        chunks = [order[s : s + bs] for s in range(0, len(order), bs)]
    else:
        groups: dict[int, list[int]] = defaultdict(list)
        for k, s in enumerate(prompts.suffixes):
            groups[len(s)].append(k)
        chunks = [
            groups[length][s : s + bs]
            for length in sorted(groups)
            for s in range(0, len(groups[length]), bs)
        ]
    for chunk in chunks:
        dists = expand(
            model,
            tokenizer,
            prefix_cache,
            prompts.prefix_ids,
            [prompts.suffixes[k] for k in chunk],
            decoding,
            setup,
            stats,
        )
        for k, d in zip(chunk, dists):
            out[k] = d
    return [d for d in out if d is not None]
