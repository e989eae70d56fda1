"""Every use of transformers internals by the hf engine, in one place.

The exact decoder must apply **the same** logits processors and special tokens that
``generate()`` prepares, and the prefix cache must copy, slice and share the KV layers of a
``DynamicCache`` and plug an attention function into the decoder. transformers exposes none of
this as public API, so these are the only places the engine touches private methods, private
attributes or cache internals. Everything else (``exact``, ``prefix_cache``,
``shared_prefix``, ``engine``) goes through the functions below.

Checked against :data:`CHECKED_RANGE` (the version pinned in ``requirements.lock``); the engine
proof tests (``tests/judge/engines/hf/test_exact_enumeration.py``, ``test_hf_exact_padding.py``,
``test_hf_engine_equivalence.py``) are what re-checks a new transformers version: widen the
range only after they pass on it. :func:`check_version` logs a warning outside the range.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger(__name__)

#: transformers versions this module was checked against (``>= low, < high``).
CHECKED_RANGE: tuple[str, str] = ("5.23.0", "5.24")
#: torch version of the one private torch op used (:func:`cpu_flash_attention_with_lse`).
TORCH_CHECKED: str = "2.13"
_warned = False


def check_version() -> bool:
    """True if the installed transformers is inside :data:`CHECKED_RANGE` (else warns once)."""
    global _warned
    import transformers
    from packaging.version import Version

    v = Version(transformers.__version__)
    ok = Version(CHECKED_RANGE[0]) <= v < Version(CHECKED_RANGE[1])
    if not ok and not _warned:
        log.warning(
            "transformers %s is outside the range the hf engine's internals were checked "
            "against (>=%s,<%s): run tests/judge before trusting exact distributions",
            v,
            *CHECKED_RANGE,
        )
        _warned = True
    return ok


# --------------------------------------------------------------------------- generation setup
def generation_config(model: Any, generate_kwargs: dict[str, Any]) -> Any:
    """The ``GenerationConfig`` ``generate(**generate_kwargs)`` would use, special tokens set.

    ``PreTrainedModel._prepare_generation_config`` merges the model's generation config with the
    call's kwargs; ``_prepare_special_tokens`` adds the EOS/pad tensors (batch 1).
    """
    check_version()
    gen_cfg, _ = model._prepare_generation_config(None, **generate_kwargs)
    return gen_cfg


def prepare_special_tokens(model: Any, gen_cfg: Any) -> None:
    """``generate``'s special-token tensors on ``gen_cfg`` (in place, batch 1)."""
    model._prepare_special_tokens(gen_cfg, True, device=model.device, batch_size=1)


def eos_token_ids(gen_cfg: Any) -> set[int]:
    """The EOS ids ``generate`` stops at (``GenerationConfig._eos_token_tensor``)."""
    eos = gen_cfg._eos_token_tensor
    return set() if eos is None else {int(x) for x in eos.reshape(-1).tolist()}


def logits_processor_list(model: Any, gen_cfg: Any, prompt_ids: Any) -> Any:
    """``generate``'s ``LogitsProcessorList`` for a prompt (``_get_logits_processor``)."""
    return model._get_logits_processor(
        generation_config=gen_cfg,
        input_ids_seq_length=prompt_ids.shape[-1],
        encoder_input_ids=prompt_ids,
        prefix_allowed_tokens_fn=None,
        logits_processor=None,
        device=prompt_ids.device,
        model_kwargs={},
    )


# --------------------------------------------------------------------------- M-RoPE state
def rope_deltas(model: Any) -> Any:
    """Qwen-VL's M-RoPE text offsets kept as model state (``model.model.rope_deltas``)."""
    return getattr(getattr(model, "model", None), "rope_deltas", None)


def set_rope_deltas(model: Any, deltas: Any) -> None:
    """Put back the M-RoPE offsets of a prefix (overwritten by every forward from position 0)."""
    model.model.rope_deltas = deltas


# --------------------------------------------------------------------------- cache layers
def cache_layers(cache: Any) -> list[Any]:
    """The per-layer KV objects of a ``DynamicCache`` (``cache.layers``)."""
    return list(getattr(cache, "layers", None) or [])


def layer_has_kv(layer: Any) -> bool:
    """True if a cache layer holds keys (``is_initialized`` and a non-empty ``keys`` tensor)."""
    keys = getattr(layer, "keys", None)
    return bool(getattr(layer, "is_initialized", False)) and keys is not None and keys.numel() > 0


def map_layers(caches: Sequence[Any], fn: Callable[[Sequence[Any]], tuple[Any, Any]]) -> Any:
    """A shallow copy of ``caches[0]`` whose layers' (keys, values) are ``fn(layers)``.

    ``fn`` gets the i-th layer of every cache; layers without KV are copied as they are. The
    input caches are never modified.
    """
    new = copy.copy(caches[0])
    new.layers = []
    for layers in zip(*(cache_layers(c) for c in caches)):
        nl = copy.copy(layers[0])
        if layer_has_kv(layers[0]):
            nl.keys, nl.values = fn(layers)
        new.layers.append(nl)
    return new


def dynamic_layer_types() -> tuple[type, type]:
    """(full-attention, sliding-window) dynamic layer classes of ``transformers.cache_utils``."""
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    return DynamicLayer, DynamicSlidingWindowLayer


# --------------------------------------------------------------------------- attention plug-in
def text_config(model: Any) -> Any:
    """The decoder's config (``text_config`` of a VLM, else the model config)."""
    cfg = model.config
    return getattr(cfg, "text_config", None) if "text_config" in cfg.sub_configs else cfg


def attn_implementation(config: Any) -> str | None:
    """The attention implementation a config dispatches to (``config._attn_implementation``)."""
    return getattr(config, "_attn_implementation", None)


def sdpa_attention_forward() -> Callable[..., Any]:
    """transformers' SDPA attention function (``integrations.sdpa_attention``)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward as fn

    return fn


def register_attention(name: str, fn: Callable[..., Any]) -> None:
    """Register ``fn`` as attention implementation ``name`` with transformers' SDPA mask."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(name, fn)
    AttentionMaskInterface.register(name, sdpa_mask)


def cpu_flash_attention_with_lse() -> Callable[..., Any]:
    """torch's private CPU flash-attention op, which also returns the log-sum-exp.

    ``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu`` (checked with torch
    :data:`TORCH_CHECKED`): the shared-prefix attention merges two partial softmaxes by their
    log-normalisers, which the public ``scaled_dot_product_attention`` does not return.
    """
    import torch

    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
