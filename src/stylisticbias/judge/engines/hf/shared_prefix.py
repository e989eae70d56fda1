"""Shared-prefix attention: suffix rows attend to ONE batch-1 prefix KV cache, never copied.

The copy path (``cache_repeat`` + ``DynamicLayer.update``) materialises the image prefix's
keys/values once per suffix row (for LLaVA-7B about 375 MB a row). Here a
:class:`SharedPrefixCache` stores per row only the suffix/branch keys and values; the prefix
K/V stays batch 1. A registered attention function (:data:`ATTN_NAME`, installed on the text
decoder by :func:`install`) computes, for every query,

* the prefix part as one GEMM of all suffix queries of a key/value head against the shared
  prefix keys (grouped-query heads packed, no ``repeat_kv``), and
* the suffix part per row, with the model's own (bool) mask split at the prefix length,

and merges the two softmax parts exactly (log-sum-exp merge, float32). Everything else
(positions, masks, logits processors) is what the model computes for the copy path: the cache
reports the same sequence length and mask sizes.

Outside an active :class:`SharedPrefixCache` forward (prefill, vision tower, ``generate``)
the function delegates to transformers' ``sdpa`` attention unchanged. Unsupported cases
(non-sdpa models, linear-attention or KV-sharing layers, sliding windows shorter than the
prompt) are detected by :func:`unsupported_reason` or raise :class:`SharedPrefixUnsupported`
at the first forward, and the engine falls back to the copy path.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import Any

from stylisticbias.judge.engines.hf import compat as hf_compat

log = logging.getLogger(__name__)

ATTN_NAME = "stylisticbias_shared_prefix"
MODES = ("shared", "copy")
_CHUNK_ELEMS = 1 << 26  # float32 score elements per prefix-attention chunk (256 MB)

_ACTIVE: contextvars.ContextVar[SharedPrefixCache | None] = contextvars.ContextVar(
    "stylisticbias_shared_prefix_cache", default=None
)


class SharedPrefixUnsupported(RuntimeError):
    """The model's attention does not fit the shared-prefix scheme (use the copy path)."""


# ---------------------------------------------------------------------------------------------
# cache
# ---------------------------------------------------------------------------------------------


class SharedPrefixLayer:
    """One decoder layer: batch-1 prefix K/V (shared) + per-row suffix K/V (``keys``/``values``).

    Implements the part of transformers' cache-layer interface the decoders use.
    """

    is_compileable = False
    is_croppable = False
    supports_early_init = False

    def __init__(self, prefix_keys: Any, prefix_values: Any, keys: Any, values: Any, src: Any):
        self.prefix_keys = prefix_keys  # [1, Hkv, P, D]
        self.prefix_values = prefix_values
        self.keys = keys  # [B, Hkv, S, D]
        self.values = values
        self.is_initialized = True
        self.is_sliding = bool(getattr(src, "is_sliding", False))
        self._src = src

    @property
    def prefix_len(self) -> int:
        return int(self.prefix_keys.shape[-2])

    def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
        """Append the new suffix tokens; return the suffix keys/values (prefix NOT included)."""
        import torch

        self.keys = torch.cat([self.keys, key_states], dim=-2)
        self.values = torch.cat([self.values, value_states], dim=-2)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.prefix_len + int(self.keys.shape[-2])

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.get_seq_length() + query_length, 0

    def get_max_length(self) -> int:
        return -1

    def with_rows(self, keys: Any, values: Any) -> SharedPrefixLayer:
        return SharedPrefixLayer(self.prefix_keys, self.prefix_values, keys, values, self._src)

    def suffix_bytes(self) -> int:
        return self.keys.numel() * self.keys.element_size() * 2


class SharedPrefixCache:
    """A cache of ``B`` suffix rows over one shared batch-1 prefix (see module doc).

    Wraps the prefix ``DynamicCache`` (kept untouched); ``layers`` are
    :class:`SharedPrefixLayer`. Use :meth:`repeat`, :meth:`select` and :meth:`cat` as the copy
    path uses ``cache_repeat``/``cache_select``/``cache_cat``.
    """

    def __init__(self, prefix_cache: Any, layers: list[SharedPrefixLayer]):
        self.prefix_cache = prefix_cache
        self.layers = layers

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def from_prefix(cls, prefix_cache: Any, total_len: int | None = None) -> SharedPrefixCache:
        """Zero-row template over ``prefix_cache`` (a batch-1 ``DynamicCache``).

        ``total_len``: the longest prompt + response length the rows will reach (checked
        against sliding windows).
        """
        reason = cache_unsupported_reason(prefix_cache, total_len)
        if reason:
            raise SharedPrefixUnsupported(reason)
        layers = []
        for la in hf_compat.cache_layers(prefix_cache):
            k, v = la.keys, la.values
            empty_k = k.new_empty((0, *k.shape[1:-2], 0, k.shape[-1]))
            empty_v = v.new_empty((0, *v.shape[1:-2], 0, v.shape[-1]))
            layers.append(SharedPrefixLayer(k, v, empty_k, empty_v, la))
        return cls(prefix_cache, layers)

    def repeat(self, n: int) -> SharedPrefixCache:
        """``n`` rows with an empty suffix (nothing of the prefix is copied)."""
        out = []
        for la in self.layers:
            pk, pv = la.prefix_keys, la.prefix_values
            k = pk.new_empty((n, *pk.shape[1:-2], 0, pk.shape[-1]))
            v = pv.new_empty((n, *pv.shape[1:-2], 0, pv.shape[-1]))
            out.append(la.with_rows(k, v))
        return SharedPrefixCache(self.prefix_cache, out)

    def select(self, rows: Any) -> SharedPrefixCache:
        """Suffix rows ``rows`` (copies the suffix part only)."""
        out = []
        for la in self.layers:
            r = rows.to(la.keys.device)
            out.append(la.with_rows(la.keys.index_select(0, r), la.values.index_select(0, r)))
        return SharedPrefixCache(self.prefix_cache, out)

    @staticmethod
    def cat(caches: list[SharedPrefixCache]) -> SharedPrefixCache:
        """Concatenate along the batch (all over the same prefix, equal suffix lengths)."""
        import torch

        if len(caches) == 1:
            return caches[0]
        out = []
        for layers in zip(*(c.layers for c in caches)):
            k = torch.cat([la.keys for la in layers], 0)
            v = torch.cat([la.values for la in layers], 0)
            out.append(layers[0].with_rows(k, v))
        return SharedPrefixCache(caches[0].prefix_cache, out)

    # -- the part of transformers' Cache interface the decoders use ----------------------------
    def update(self, key_states: Any, value_states: Any, layer_idx: int, *a: Any, **k: Any) -> Any:
        """Append to layer ``layer_idx``; returns its suffix keys/values."""
        return self.layers[layer_idx].update(key_states, value_states)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.layers[layer_idx].get_seq_length() if layer_idx < len(self.layers) else 0

    def get_query_offset(self, layer_idx: int = 0) -> int:
        return self.get_seq_length(layer_idx)

    def get_mask_sizes(self, query_length: int, layer_idx: int) -> tuple[int, int]:
        if layer_idx >= len(self.layers):
            return query_length, 0
        return self.layers[layer_idx].get_mask_sizes(query_length)

    def get_max_length(self, layer_idx: int | None = None) -> int:
        return -1

    def has_previous_state(self, *args: Any, **kwargs: Any) -> bool:
        return False

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def is_compileable(self) -> bool:
        return False

    @property
    def is_initialized(self) -> bool:
        return True

    @property
    def is_sliding(self) -> list[bool]:
        return [la.is_sliding for la in self.layers]

    @property
    def is_linear(self) -> list[bool]:
        return [False] * len(self.layers)

    @property
    def is_dummy(self) -> list[bool]:
        return [False] * len(self.layers)

    @property
    def batch_size(self) -> int:
        return int(self.layers[0].keys.shape[0]) if self.layers else -1

    def suffix_bytes(self) -> int:
        """Bytes held per-row (suffix K/V of all layers)."""
        return sum(la.suffix_bytes() for la in self.layers)

    def prefix_bytes(self) -> int:
        """Bytes of the shared prefix K/V (held once, whatever the batch size)."""
        return sum(la.prefix_keys.numel() * la.prefix_keys.element_size() * 2 for la in self.layers)

    @contextlib.contextmanager
    def active(self, model: Any) -> Iterator[None]:
        """Route ``model``'s attention to this cache during one forward (installs it if needed)."""
        if not install(model):
            raise SharedPrefixUnsupported(unsupported_reason(model) or "cannot install attention")
        tok = _ACTIVE.set(self)
        try:
            yield
        finally:
            _ACTIVE.reset(tok)


def cache_unsupported_reason(prefix_cache: Any, total_len: int | None = None) -> str | None:
    """Why a prefix cache cannot be shared (``None`` when it can)."""
    DynamicLayer, DynamicSlidingWindowLayer = hf_compat.dynamic_layer_types()

    for i, la in enumerate(hf_compat.cache_layers(prefix_cache)):
        if type(la) not in (DynamicLayer, DynamicSlidingWindowLayer):
            return f"cache layer {i} is a {type(la).__name__} (only dynamic attention layers)"
        if not getattr(la, "is_initialized", False) or la.keys is None or la.keys.ndim != 4:
            return f"cache layer {i} holds no keys (KV sharing across layers?)"
        if la.keys.shape[0] != 1:
            return f"cache layer {i} has batch {la.keys.shape[0]} (need a batch-1 prefix)"
        if isinstance(la, DynamicSlidingWindowLayer):
            window = int(la.sliding_window)
            need = la.cumulative_length if total_len is None else total_len
            if need >= window - 1 or la.keys.shape[-2] != la.cumulative_length:
                return f"layer {i}: sliding window {window} shorter than the prompt ({need})"
    if not hf_compat.cache_layers(prefix_cache):
        return "empty prefix cache"
    return None


# ---------------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------------


def _attend_lse(q: Any, k: Any, v: Any, mask: Any, scale: float, softcap: float | None) -> Any:
    """Softmax attention and its log-normaliser: (out [N,H,L,D] float32, lse [N,H,L] float32).

    ``mask``: bool (True = attend), broadcastable to [N, 1, L, K], or ``None``. On CPU the
    fused flash kernel (which returns the log-sum-exp) is used; elsewhere an explicit float32
    computation, chunked along L to bound the score matrix.
    """
    import torch

    if q.device.type == "cpu" and not softcap and q.dtype in (torch.float32, torch.bfloat16):
        add = None
        if mask is not None:
            add = torch.zeros(mask.shape, dtype=q.dtype, device=q.device)
            add = add.masked_fill(~mask, float("-inf"))
        op = hf_compat.cpu_flash_attention_with_lse()
        out, lse = op(q, k, v, 0.0, False, attn_mask=add, scale=scale)
        return out.float(), lse.float()
    f32 = torch.float32
    kt, vf = k.to(f32).transpose(-1, -2), v.to(f32)
    n, h, length = q.shape[0], q.shape[1], q.shape[2]
    step = max(1, _CHUNK_ELEMS // max(1, n * h * k.shape[2]))
    outs, lses = [], []
    for a in range(0, length, step):
        sc = torch.matmul(q[:, :, a : a + step].to(f32), kt) * scale
        if softcap:
            sc = torch.tanh(sc / softcap) * softcap
        if mask is not None:
            sc = sc.masked_fill(~mask[:, :, a : a + step], float("-inf"))
        m = sc.amax(-1, keepdim=True).nan_to_num(neginf=0.0)
        e = torch.exp(sc - m)
        z = e.sum(-1, keepdim=True)
        outs.append(torch.matmul(e, vf) / z.clamp_min(torch.finfo(f32).tiny))
        lses.append((torch.log(z) + m).squeeze(-1))
    if len(outs) == 1:
        return outs[0], lses[0]
    return torch.cat(outs, 2), torch.cat(lses, 2)


def _merge_attention(
    query: Any,
    layer: SharedPrefixLayer,
    key: Any,
    value: Any,
    mask: Any,
    scale: float,
    softcap: float | None,
) -> Any:
    """Exact softmax attention of ``query`` [B,Hq,q,D] over (shared prefix ++ row suffix)."""
    import torch

    b, hq, q, d = query.shape
    pk, pv = layer.prefix_keys, layer.prefix_values
    hkv, p = pk.shape[1], pk.shape[2]
    g = hq // hkv
    s = key.shape[2]
    # grouped query heads of one kv head side by side: [B, Hkv, G*q, D]
    qs = query.reshape(b, hkv, g * q, d)
    # prefix part: every row's queries as ONE batch-1 sequence against the batch-1 prefix
    qp = qs.transpose(0, 1).reshape(1, hkv, b * g * q, d)
    # the prefix part of the model's mask is all True: every suffix query comes after every
    # prefix key (causal), the prefix holds no padding (suffix batches pad after it), and
    # sliding windows shorter than the prompt are refused (cache_unsupported_reason). So no
    # mask there -- and no host sync to check it (this runs once per layer and forward).
    op, lp = _attend_lse(qp, pk, pv, None, scale, softcap)
    op = op.view(hkv, b, g * q, d).transpose(0, 1)
    lp = lp.view(hkv, b, g * q).transpose(0, 1)
    # suffix part: per row, causal (the model's mask, or bottom-right causal when it passed none)
    if mask is not None:
        sm = mask[..., p:]
    else:  # query i sits at suffix position s - q + i
        i = torch.arange(q, device=query.device)[:, None]
        j = torch.arange(s, device=query.device)[None, :]
        sm = (j <= i + (s - q)).view(1, 1, q, s)
    bm = sm.shape[0]
    sm = sm.expand(bm, 1, q, s).unsqueeze(2).expand(bm, 1, g, q, s).reshape(bm, 1, g * q, s)
    os_, ls = _attend_lse(qs, key, value, sm, scale, softcap)
    # log-sum-exp merge of the two parts
    lse = torch.logaddexp(lp, ls)
    wp = torch.exp(lp - lse).unsqueeze(-1)
    ws = torch.exp(ls - lse).unsqueeze(-1)
    out = torch.where(wp > 0, op * wp, 0.0) + torch.where(ws > 0, os_ * ws, 0.0)
    return out.reshape(b, hq, q, d).transpose(1, 2).contiguous().to(query.dtype)


def shared_prefix_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """The attention function registered by ``hf_compat.register_attention``; see module doc."""
    import torch

    cache = _ACTIVE.get()
    if cache is None:
        return hf_compat.sdpa_attention_forward()(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    idx = getattr(module, "layer_idx", None)
    layer = cache.layers[idx] if isinstance(idx, int) and idx < len(cache.layers) else None
    if layer is None or key is not layer.keys:
        raise SharedPrefixUnsupported(
            f"{type(module).__name__} (layer {idx}) does not attend to the cache layer it updated"
        )
    if dropout:
        raise SharedPrefixUnsupported("attention dropout > 0")
    for k in ("s_aux", "sinks", "position_bias"):
        if kwargs.get(k) is not None:
            raise SharedPrefixUnsupported(f"attention argument {k!r} is not supported")
    if attention_mask is not None and attention_mask.dtype != torch.bool:
        raise SharedPrefixUnsupported(f"attention mask of dtype {attention_mask.dtype}")
    scale = float(scaling) if scaling is not None else query.shape[-1] ** -0.5
    out = _merge_attention(query, layer, key, value, attention_mask, scale, kwargs.get("softcap"))
    return out, None


# ---------------------------------------------------------------------------------------------
# installation
# ---------------------------------------------------------------------------------------------


def unsupported_reason(model: Any) -> str | None:
    """Why the model's decoder cannot use the shared-prefix attention (``None`` when it can)."""
    tc = hf_compat.text_config(model)
    if tc is None:
        return "no text config"
    impl = hf_compat.attn_implementation(tc)
    if impl not in ("sdpa", ATTN_NAME):
        return f"text attention implementation {impl!r} (shared prefix wraps 'sdpa')"
    if int(getattr(tc, "num_kv_shared_layers", 0) or 0) > 0:
        return "the decoder shares KV caches across layers"
    return None


def install(model: Any) -> bool:
    """Route the text decoder's attention through :func:`shared_prefix_attention`.

    Returns ``False`` (and logs why) where the model is not supported; the model is then left
    untouched. Idempotent.
    """
    reason = unsupported_reason(model)
    if reason:
        log.info("shared-prefix attention unavailable (%s): using the per-row prefix copy", reason)
        return False
    tc = hf_compat.text_config(model)
    if hf_compat.attn_implementation(tc) == ATTN_NAME:
        return True
    hf_compat.register_attention(ATTN_NAME, shared_prefix_attention)
    if tc is model.config:
        model.set_attn_implementation(ATTN_NAME)
    else:
        model.set_attn_implementation({"text_config": ATTN_NAME})
    if hf_compat.attn_implementation(tc) != ATTN_NAME:
        log.info("shared-prefix attention could not be set on %s", type(model).__name__)
        return False
    return True
