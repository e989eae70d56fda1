"""The image-prefix KV cache behind one interface, whichever way the prefix is held.

Two implementations answer the same five calls, so the exact decoder (:mod:`.exact`) never
asks which one it has:

* the **copy path**: the prefill's transformers ``DynamicCache``; rows are stride-0 views of the
  batch-1 prefix until the model appends, then per-row copies (``prefix_sharing: copy``);
* the **shared path**: :class:`~stylisticbias.judge.engines.hf.shared_prefix.SharedPrefixCache`, one
  prefix for every row plus per-row suffix KV, read by its own attention function.

The calls: :func:`cache_select` (keep rows), :func:`cache_repeat` (n rows of a batch-1 template),
:func:`cache_cat` (stack equal-length caches), :func:`forward_context` (what must be active while
the model runs on the cache) and :func:`mrope_deltas` (the M-RoPE offsets recorded at prefill).
The ``DynamicCache`` internals they need are in :mod:`.compat`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from stylisticbias.judge.engines.hf import compat as hf_compat
from stylisticbias.judge.engines.hf.shared_prefix import SharedPrefixCache


def cache_select(cache: Any, rows: Any) -> Any:
    """A new cache holding batch rows ``rows`` of ``cache`` (copies; ``cache`` is untouched)."""
    if isinstance(cache, SharedPrefixCache):
        return cache.select(rows)

    def pick(layers: Sequence[Any]) -> tuple[Any, Any]:
        la = layers[0]
        idx = rows.to(la.keys.device)
        return la.keys.index_select(0, idx), la.values.index_select(0, idx)

    return hf_compat.map_layers([cache], pick)


def cache_repeat(cache: Any, n: int) -> Any:
    """``n`` rows of a batch-1 cache as stride-0 views (no copy until the model appends).

    For a :class:`SharedPrefixCache` template: ``n`` rows with empty suffixes (never a copy).
    """
    if isinstance(cache, SharedPrefixCache):
        return cache.repeat(n)

    def expand(layers: Sequence[Any]) -> tuple[Any, Any]:
        la = layers[0]
        return la.keys.expand(n, *la.keys.shape[1:]), la.values.expand(n, *la.values.shape[1:])

    return hf_compat.map_layers([cache], expand)


def cache_cat(caches: Sequence[Any]) -> Any:
    """Concatenate caches of equal sequence length along the batch dimension."""
    import torch

    if len(caches) == 1:
        return caches[0]
    if isinstance(caches[0], SharedPrefixCache):
        return SharedPrefixCache.cat(list(caches))

    def cat(layers: Sequence[Any]) -> tuple[Any, Any]:
        return torch.cat([la.keys for la in layers], 0), torch.cat([la.values for la in layers], 0)

    return hf_compat.map_layers(caches, cat)


def forward_context(cache: Any, model: Any) -> contextlib.AbstractContextManager[Any]:
    """What must be active while ``model`` runs on ``cache`` (the shared path's attention)."""
    if isinstance(cache, SharedPrefixCache):
        return cache.active(model)
    return contextlib.nullcontext()


def mrope_deltas(cache: Any) -> Any:
    """The M-RoPE offsets :func:`~.exact.prefill` recorded with the prefix (or ``None``)."""
    return getattr(getattr(cache, "prefix_cache", cache), "mrope_deltas", None)
