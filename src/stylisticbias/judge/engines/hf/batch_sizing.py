"""Exact-engine batch sizes from the free memory (``suffix/branch_batch_size: auto``).

The same settings then run on an 80 GB and a 141 GB card and on a small CPU machine. The bytes
one batch row needs are estimated from the model's config:

* a **suffix row** (``width`` query tokens on the shared prefix): the decoder activations of
  its tokens (hidden states, q/k/v, the MLP's intermediate, in the model dtype, a few live at
  once), its suffix K/V in every layer, and its last-token logits in float32;
* a **branch row** (one query token): the vocabulary-wide float32 logits, processed scores,
  probabilities and the candidate mask of the pruning step (about 4 vocabulary vectors), plus
  its K/V and one token's activations.

The shared prefix K/V (held once) is not per row. ``fraction`` of the free memory is used, the
rest is headroom for the allocator, the vision tower and the prefix itself; sizes are capped
(``suffix_cap``: an image has 100 prompts; ``branch_cap``) and at least 1.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

AUTO = "auto"


@dataclass(frozen=True)
class BatchSizes:
    """Chosen sizes and what they were derived from."""

    suffix_batch_size: int
    branch_batch_size: int
    free_bytes: int
    suffix_row_bytes: int
    branch_row_bytes: int


def free_bytes(device: Any) -> int:
    """Free memory on ``device``: ``cuda.mem_get_info`` on a GPU, available RAM on the CPU."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return int(torch.cuda.mem_get_info(dev)[0])
    import psutil

    return int(psutil.virtual_memory().available)


def _text_config(model: Any) -> Any:
    cfg = model.config
    return getattr(cfg, "text_config", None) or cfg


def _layer_configs(tc: Any) -> list[Any]:
    """One config per decoder layer. A heterogeneous config (transformers >= 5, e.g. Gemma 4,
    whose sliding and global layers differ in ``head_dim``) refuses the global value of a
    per-layer attribute: read it from ``per_layer_config[i]``; others repeat the one config."""
    n = int(tc.num_hidden_layers)
    if getattr(tc, "is_heterogeneous", False):
        return [tc.per_layer_config[i] for i in range(n)]
    return [tc] * n


def row_bytes(model: Any, width: int, max_new_tokens: int) -> tuple[int, int]:
    """(bytes per suffix row of ``width`` tokens, bytes per branch row) of ``model``.

    The KV cache sums over layers (each with its own heads and head size where they differ);
    activations take the largest layer.
    """
    tc = _text_config(model)
    vocab = int(tc.vocab_size)
    elem = next(model.parameters()).element_size()
    kv_per_token = act_per_token = 0
    for lc in _layer_configs(tc):
        hidden = int(lc.hidden_size)
        inter = int(getattr(lc, "intermediate_size", 4 * hidden) or 4 * hidden)
        heads = int(lc.num_attention_heads)
        kv_heads = int(getattr(lc, "num_key_value_heads", heads) or heads)
        head_dim = int(getattr(lc, "head_dim", None) or hidden // heads)
        kv_per_token += 2 * kv_heads * head_dim * elem
        act_per_token = max(act_per_token, (4 * hidden + 3 * inter + 2 * heads * head_dim) * elem)
    suffix = width * (act_per_token + kv_per_token) + vocab * 4
    branch = 4 * vocab * 4 + (width + max_new_tokens) * kv_per_token + act_per_token
    return suffix, branch


def choose(
    model: Any,
    width: int,
    max_new_tokens: int,
    *,
    fraction: float = 0.5,
    suffix_cap: int = 100,
    branch_cap: int = 1024,
    available: int | None = None,
) -> BatchSizes:
    """Suffix and branch batch sizes that fit ``fraction`` of the free memory."""
    free = free_bytes(model.device) if available is None else int(available)
    s_row, b_row = row_bytes(model, width, max_new_tokens)
    budget = max(0.0, fraction * free)
    sizes = BatchSizes(
        suffix_batch_size=max(1, min(suffix_cap, int(budget // s_row))),
        branch_batch_size=max(1, min(branch_cap, int(budget // b_row))),
        free_bytes=free,
        suffix_row_bytes=s_row,
        branch_row_bytes=b_row,
    )
    log.info(
        "batch sizes from %.1f GB free: %d suffix rows (%.1f MB each), %d branch rows (%.1f MB)",
        free / 1e9,
        sizes.suffix_batch_size,
        s_row / 1e6,
        sizes.branch_batch_size,
        b_row / 1e6,
    )
    return sizes
