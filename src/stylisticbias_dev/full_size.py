"""Full-size random-weight models of two paper architectures, built in memory (GPU benchmark).

No weights can be downloaded where this project is developed, so the GPU throughput benchmark
(:mod:`stylisticbias_dev.bench.judge_gpu`) runs models of the *real* shapes with random weights:
every layer count, width, head layout, vocabulary size, vision tower and image-token count is
transcribed from the hub checkpoint's ``config.json`` / ``preprocessor_config.json`` below, so
the FLOPs, the KV-cache size and the memory traffic per judgment are those of the real model.
What is not real is the tokenizer (the tiny checkpoints' word-level one: prompt suffixes are
~1 token per word, close to a BPE tokenizer on plain English) and the answers (random weights
with the planted answer grammar of :func:`stylisticbias_dev.tiny.plant_grammar`, kept
readable through the full depth by :func:`damp_residual`, so exact decoding expands a handful
of branches per prompt, as on a real chat model).

``scale="tiny"`` keeps the image processing (so the same image-token count) and the layer
structure but shrinks every width and depth, for CPU tests of the same code path.

Specs: :data:`SPECS` (``qwen3-vl-8b``: Qwen/Qwen3-VL-8B-Instruct, 8.77B parameters;
``llava-v1-6-mistral-7b``: llava-hf/llava-v1.6-mistral-7b-hf, 7.57B parameters), keyed by the
names of ``conf/model/``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stylisticbias.errors import StylisticBiasError
from stylisticbias_dev.tiny import _text_cfg

log = logging.getLogger(__name__)

#: Qwen/Qwen3-VL-8B-Instruct config.json (text_config / vision_config).
QWEN3_VL_8B_TEXT: dict[str, Any] = {
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 262144,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "rope_parameters": {
        "rope_type": "default",
        "rope_theta": 5000000.0,
        "mrope_section": [24, 20, 20],
        "mrope_interleaved": True,
    },
    "tie_word_embeddings": False,
}
QWEN3_VL_8B_VISION: dict[str, Any] = {
    "depth": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_heads": 16,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 4096,
    "num_position_embeddings": 2304,
    "deepstack_visual_indexes": [8, 16, 24],
    "hidden_act": "gelu_pytorch_tanh",
}

#: llava-hf/llava-v1.6-mistral-7b-hf config.json (Mistral-7B-Instruct-v0.2 + CLIP ViT-L/14-336).
LLAVA_16_MISTRAL_TEXT: dict[str, Any] = {
    "model_type": "mistral",
    "vocab_size": 32064,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-5,
    "rope_theta": 1000000.0,
    "sliding_window": None,
    "tie_word_embeddings": False,
}
LLAVA_16_VISION: dict[str, Any] = {
    "model_type": "clip_vision_model",
    "image_size": 336,
    "patch_size": 14,
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "projection_dim": 768,
    "hidden_act": "quick_gelu",
}
LLAVA_16_PINPOINTS: list[list[int]] = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]

# tiny scale: same structure, small widths (head_dim and the M-RoPE sections shrink together)
_TINY_TEXT = {
    k: v
    for k, v in _text_cfg(0).items()
    if k
    in (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
    )
}


#: ``shrunk`` scale: the real tokenizer, image processing and vocabulary, widths and depth cut
#: to a CPU-sized but compute-dominated decoder (the overhead benchmark,
#: :mod:`stylisticbias_dev.bench.judge_overhead`); the vision tower shrinks further (its FLOPs
#: are not what that benchmark measures, its image-token count is kept).
_SHRUNK_TEXT = {
    "hidden_size": 1024,
    "num_hidden_layers": 8,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "head_dim": 64,
}

#: (model class, config, processor, grammar start token, grammar sharpness, grammar aliases)
_Parts = tuple[Any, Any, Any, str, float, dict[str, str]]


@dataclass(frozen=True)
class Spec:
    """One full-size architecture: its conf/model name, hub id and in-memory builder."""

    name: str
    hub_id: str
    params_billion: float  # the hub checkpoint's parameter count (for the shape test)
    build: Callable[[str, bool], _Parts]


def _qwen3_vl(scale: str, vocab_pad: bool) -> _Parts:
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    from stylisticbias_dev.tiny_archs import qwen3_vl

    start, aliases = "\n", {}
    if scale == "shrunk":
        from stylisticbias_dev.real_tokenizers import qwen_tokenizer

        tok = qwen_tokenizer(qwen3_vl._QWEN_TEMPLATE)
        start, aliases = "Ċ", {" ": "Ġ"}  # byte-level BPE spellings of "\n" and " "
    else:
        tok = qwen3_vl.tokenizer()
    vis = dict(QWEN3_VL_8B_VISION)
    # conf/model/qwen3-vl-8b.yaml pins 64..1,024 image tokens (32 px per token)
    processor = qwen3_vl.image_processor_and(
        tok,
        patch=vis["patch_size"],
        merge=vis["spatial_merge_size"],
        min_tokens=64,
        max_tokens=1024,
    )
    text = dict(QWEN3_VL_8B_TEXT)
    if scale == "tiny":
        text.update(_TINY_TEXT)
        text["rope_parameters"] = {**text["rope_parameters"], "mrope_section": [2, 3, 3]}
        vis.update(
            {
                "depth": 4,
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_heads": 4,
                "out_hidden_size": 64,
                "deepstack_visual_indexes": [1, 2],
            }
        )
    elif scale == "shrunk":
        text.update(_SHRUNK_TEXT, intermediate_size=3072)
        text["rope_parameters"] = {**text["rope_parameters"], "mrope_section": [12, 10, 10]}
        vis.update(
            {
                "depth": 2,
                "hidden_size": 256,
                "intermediate_size": 1024,
                "num_heads": 4,
                "out_hidden_size": 1024,
                "deepstack_visual_indexes": [0, 1],
            }
        )
    text["vocab_size"] = max(len(tok), text["vocab_size"] if vocab_pad else len(tok))
    ids = tok.convert_tokens_to_ids
    cfg = Qwen3VLConfig(
        text_config=text,
        vision_config=vis,
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=False,
    )
    return Qwen3VLForConditionalGeneration, cfg, processor, start, 3.0, aliases


def _llava_next(scale: str, vocab_pad: bool) -> _Parts:
    from transformers import LlavaNextConfig, LlavaNextForConditionalGeneration

    from stylisticbias_dev.tiny_archs import llava_next

    start, aliases = "[/INST]", {}
    if scale == "shrunk":
        from stylisticbias_dev.real_tokenizers import mistral_tokenizer

        tok = mistral_tokenizer(llava_next._MISTRAL_TEMPLATE)
        start, aliases = "]", {" ": "▁"}  # "[/INST]" ends in the piece "]"
    else:
        tok = llava_next.tokenizer()
    vis = dict(LLAVA_16_VISION)
    s, patch = vis["image_size"], vis["patch_size"]
    processor = llava_next.processor_for(
        tok, image_size=s, patch=patch, pinpoints=LLAVA_16_PINPOINTS
    )
    text = dict(LLAVA_16_MISTRAL_TEXT)
    if scale == "tiny":
        text.update(_TINY_TEXT)
        vis.update(
            {
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 3,
                "num_attention_heads": 4,
                "projection_dim": 64,
            }
        )
    elif scale == "shrunk":
        text.update(_SHRUNK_TEXT, intermediate_size=3584)
        vis.update(
            {
                "hidden_size": 256,
                "intermediate_size": 1024,
                "num_hidden_layers": 3,
                "num_attention_heads": 4,
                "projection_dim": 256,
            }
        )
    text["vocab_size"] = max(len(tok), text["vocab_size"] if vocab_pad else len(tok))
    cfg = LlavaNextConfig(
        text_config=text,
        vision_config=vis,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_grid_pinpoints=LLAVA_16_PINPOINTS,
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_seq_length=(s // patch) ** 2,
        projector_hidden_act="gelu",
        tie_word_embeddings=False,
    )
    return LlavaNextForConditionalGeneration, cfg, processor, start, 2.0, aliases


SPECS: dict[str, Spec] = {
    "qwen3-vl-8b": Spec("qwen3-vl-8b", "Qwen/Qwen3-VL-8B-Instruct", 8.77, _qwen3_vl),
    "llava-v1-6-mistral-7b": Spec(
        "llava-v1-6-mistral-7b", "llava-hf/llava-v1.6-mistral-7b-hf", 7.57, _llava_next
    ),
}
SCALES: tuple[str, ...] = ("full", "tiny", "shrunk")


def _spec(name: str, scale: str) -> Spec:
    if name not in SPECS:
        raise StylisticBiasError(f"no full-size spec for model {name!r}; valid: {', '.join(SPECS)}")
    if scale not in SCALES:
        raise StylisticBiasError(f"scale {scale!r}; valid: {', '.join(SCALES)}")
    return SPECS[name]


def model_config(name: str, scale: str = "full") -> Any:
    """The transformers config of ``name`` at ``scale`` (real vocabulary size at full scale)."""
    _cls, cfg, *_ = _spec(name, scale).build(scale, scale != "tiny")
    return cfg


def count_parameters(name: str, scale: str = "full") -> int:
    """Parameters of the model ``name`` builds, counted on the meta device (no memory used)."""
    import torch

    cls, cfg, *_ = _spec(name, scale).build(scale, scale != "tiny")
    with torch.device("meta"):
        model = cls(cfg)
    return sum(p.numel() for p in model.parameters())


#: Residual-branch scale of the full-size models (see :func:`damp_residual`).
FULL_RESIDUAL_SCALE = 1e-3
#: The language model's residual-branch output projections (attention out, MLP down).
_RESIDUAL_OUTPUTS = ("self_attn.o_proj", "mlp.down_proj")


def damp_residual(model: Any, scale: float) -> int:
    """Multiply the language model's residual-branch output weights by ``scale``; their count.

    With random weights, 32+ decoder layers each add an O(1) random vector to the residual
    stream, which drowns the planted answer grammar (written into the embeddings) long before
    the LM head: every next-token distribution comes out flat over the 150k vocabulary and
    exact decoding prunes everything at the first step -- a benchmark of nothing. Scaling the
    attention-output and MLP-down projections keeps the grammar readable through the full
    depth; the FLOPs, shapes and memory traffic are unchanged (only weight values differ).
    The vision tower is left as built.
    """
    import torch

    n = 0
    with torch.no_grad():
        for name, mod in model.named_modules():
            if "language_model" in name and name.endswith(_RESIDUAL_OUTPUTS):
                mod.weight.mul_(scale)
                n += 1
    if n == 0:
        raise StylisticBiasError(
            f"damp_residual: no {' / '.join(_RESIDUAL_OUTPUTS)} under a language_model in "
            f"{type(model).__name__}"
        )
    return n


def build(
    name: str,
    *,
    device: str = "cpu",
    dtype: str = "bfloat16",
    scale: str = "full",
    seed: int = 0,
    residual_scale: float | None = None,
) -> tuple[Any, Any]:
    """``(model, processor)`` of ``name`` with random weights, in eval mode on ``device``.

    The weights are initialised directly on ``device`` in ``dtype`` (an 8B model in bfloat16
    needs ~17 GB there and no host copy), then the answer grammar is planted. At full scale the
    residual branches are damped by ``residual_scale`` (default :data:`FULL_RESIDUAL_SCALE`;
    1.0 at tiny scale, whose two layers keep the grammar) so the grammar survives the depth.
    """
    import torch

    from stylisticbias.judge.engines.hf.loading import torch_dtype
    from stylisticbias_dev.tiny import prepare

    cls, cfg, processor, start, sharpness, aliases = _spec(name, scale).build(
        scale, scale != "tiny"
    )
    torch.manual_seed(seed)
    dt = torch_dtype(dtype)
    prev = torch.get_default_dtype()
    try:
        torch.set_default_dtype(dt)
        with torch.device(device):
            model = cls(cfg)
    finally:
        torch.set_default_dtype(prev)
    model.eval()
    prepare(model, processor, start, sharpness=sharpness, aliases=aliases)
    if residual_scale is None:
        residual_scale = FULL_RESIDUAL_SCALE if scale == "full" else 1.0
    if residual_scale != 1.0:
        damp_residual(model, residual_scale)
    n = sum(p.numel() for p in model.parameters())
    log.info(
        "built %s (%s scale, random weights): %.2fB parameters on %s", name, scale, n / 1e9, device
    )
    return model, processor
