"""Tiny LLaVA-NeXT (``LlavaNextForConditionalGeneration``): anyres CLIP tower + Mistral."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stylisticbias_dev.tiny import _finish, _text_cfg, _tokenizer

_MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}[INST] "
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<image>\n"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %} [/INST]"
    "{% else %}{% for item in message['content'] %}{% if item['type'] == 'text' %}"
    "{{ item['text'] }}{% endif %}{% endfor %}{{ eos_token }}{% endif %}{% endfor %}"
)


def tokenizer() -> Any:
    """The word-level tokenizer with Mistral's special tokens and chat template."""
    return _tokenizer(
        ["<image>", "[INST]", "[/INST]"],
        bos="<s>",
        eos="</s>",
        pad="<pad>",
        chat_template=_MISTRAL_TEMPLATE,
    )


def processor_for(tok: Any, *, image_size: int, patch: int, pinpoints: list[list[int]]) -> Any:
    """``LlavaNextProcessor``: anyres tiles of ``image_size`` px, ``patch`` px per token."""
    from transformers import LlavaNextImageProcessorPil, LlavaNextProcessor

    improc = LlavaNextImageProcessorPil(
        size={"shortest_edge": image_size},
        crop_size={"height": image_size, "width": image_size},
        image_grid_pinpoints=pinpoints,
    )
    return LlavaNextProcessor(
        image_processor=improc,
        tokenizer=tok,
        patch_size=patch,
        vision_feature_select_strategy="default",
        chat_template=_MISTRAL_TEMPLATE,
        image_token="<image>",
        num_additional_image_tokens=1,
    )


def build(out: Path, seed: int = 0, *, image_size: int = 32, patch: int = 4, **text: Any) -> Path:
    """LLaVA-NeXT (anyres CLIP tower + Mistral decoder), like llava-v1.6-mistral-7b-hf.

    A square image maps to the 2x2 pinpoint: ``(s/p)^2`` base tokens + ``(2s/p)^2`` high-res
    tokens + ``2s/p`` row newlines (336 image tokens at the default 32 px / 4 px).
    """
    import torch
    from transformers import LlavaNextConfig, LlavaNextForConditionalGeneration

    tok = tokenizer()
    s = image_size
    pinpoints = [[s, 2 * s], [2 * s, s], [2 * s, 2 * s]]
    processor = processor_for(tok, image_size=s, patch=patch, pinpoints=pinpoints)
    cfg = LlavaNextConfig(
        text_config={"model_type": "mistral", **_text_cfg(len(tok), **text)},
        vision_config={
            "model_type": "clip_vision_model",
            "image_size": s,
            "patch_size": patch,
            "hidden_size": 64,
            "intermediate_size": 256,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "projection_dim": 64,
        },
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        image_seq_length=(s // patch) ** 2,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlavaNextForConditionalGeneration(cfg).eval()
    return _finish(model, processor, "[/INST]", out, seed)
