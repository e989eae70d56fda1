"""Tiny InternVL (``InternVLForConditionalGeneration``): tiled InternViT + pixel shuffle + Qwen2."""

from __future__ import annotations

from pathlib import Path

from stylisticbias_dev.tiny import _finish, _text_cfg, _tokenizer

_INTERNVL_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<IMG_CONTEXT>\n"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build(
    out: Path, seed: int = 0, *, tile: int = 32, patch: int = 4, max_patches: int = 4
) -> Path:
    """InternVL like InternVL3-14B-hf, with dynamic tiling (``crop_to_patches``).

    Each ``tile`` px tile gives ``(tile/patch)^2 / 4`` tokens after the 0.5 pixel shuffle
    (16 at the defaults); an image is cut into up to ``max_patches`` tiles plus a thumbnail,
    between ``<img>`` and ``</img>``.
    """
    import torch
    from transformers import (
        GotOcr2ImageProcessorPil,
        InternVLConfig,
        InternVLForConditionalGeneration,
    )

    from stylisticbias.judge.engines.hf.processors import TinyInternVLProcessor

    img_tokens = {
        "start_image_token": "<img>",
        "end_image_token": "</img>",
        "context_image_token": "<IMG_CONTEXT>",
        "video_token": "<video>",
    }
    specials = ["<|im_start|>", "<|im_end|>", *img_tokens.values()]
    tok = _tokenizer(
        specials,
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        extra=img_tokens,
        chat_template=_INTERNVL_TEMPLATE,
    )
    n_img = (tile // patch) ** 2 // 4
    improc = GotOcr2ImageProcessorPil(
        size={"height": tile, "width": tile},
        crop_to_patches=True,
        min_patches=1,
        max_patches=max_patches,
    )
    processor = TinyInternVLProcessor(
        image_processor=improc,
        tokenizer=tok,
        image_seq_length=n_img,
        chat_template=_INTERNVL_TEMPLATE,
    )
    cfg = InternVLConfig(
        text_config={"model_type": "qwen2", **_text_cfg(len(tok))},
        vision_config={
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": [tile, tile],
            "patch_size": [patch, patch],
        },
        image_token_id=tok.convert_tokens_to_ids("<IMG_CONTEXT>"),
        image_seq_length=n_img,
        downsample_ratio=0.5,
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = InternVLForConditionalGeneration(cfg).eval()
    return _finish(model, processor, "\n", out, seed, sharpness=3.0)
