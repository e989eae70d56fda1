"""Tiny Qwen3-VL (``Qwen3VLForConditionalGeneration``): M-RoPE, deepstack, merged patches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stylisticbias_dev.tiny import _finish, _text_cfg, _tokenizer

_QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tokenizer() -> Any:
    """The word-level tokenizer with Qwen's special tokens and chat template."""
    specials = [
        "<|im_start|>",
        "<|im_end|>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|image_pad|>",
        "<|video_pad|>",
    ]
    return _tokenizer(
        specials, bos=None, eos="<|im_end|>", pad="<|endoftext|>", chat_template=_QWEN_TEMPLATE
    )


def image_processor_and(
    tok: Any, *, patch: int, merge: int, min_tokens: int, max_tokens: int
) -> Any:
    """Processor: ``patch * merge`` px per image token, ``min_tokens..max_tokens`` per image."""
    from transformers import Qwen2VLImageProcessorPil

    from stylisticbias.judge.engines.hf.processors import TinyQwen3VLProcessor

    px = patch * merge
    improc = Qwen2VLImageProcessorPil(
        size={"shortest_edge": min_tokens * px * px, "longest_edge": max_tokens * px * px},
        patch_size=patch,
        temporal_patch_size=2,
        merge_size=merge,
    )
    return TinyQwen3VLProcessor(image_processor=improc, tokenizer=tok, chat_template=_QWEN_TEMPLATE)


def build(out: Path, seed: int = 0, *, patch: int = 4, merge: int = 2) -> Path:
    """Qwen3-VL like Qwen3-VL-8B-Instruct, at ``patch * merge`` = 8 px per image token.

    The pixel budget is pinned to 32..128 tokens (a 64x64 image gives 64 tokens); the text
    decoder uses interleaved 3-D M-RoPE, so suffix positions depend on the image grid.
    """
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    tok = tokenizer()
    processor = image_processor_and(tok, patch=patch, merge=merge, min_tokens=32, max_tokens=128)
    ids = tok.convert_tokens_to_ids
    text = _text_cfg(
        len(tok),
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": [2, 3, 3],
            "mrope_interleaved": True,
        },
    )
    cfg = Qwen3VLConfig(
        text_config=text,
        vision_config={
            "depth": 2,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_heads": 4,
            "patch_size": patch,
            "spatial_merge_size": merge,
            "temporal_patch_size": 2,
            "out_hidden_size": 64,
            "num_position_embeddings": 256,
            "deepstack_visual_indexes": [1],
        },
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(cfg).eval()
    return _finish(model, processor, "\n", out, seed, sharpness=3.0)
