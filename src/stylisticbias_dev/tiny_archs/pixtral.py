"""Tiny Pixtral (``LlavaForConditionalGeneration`` + Pixtral vision tower + Mistral)."""

from __future__ import annotations

from pathlib import Path

from stylisticbias_dev.tiny import _finish, _text_cfg, _tokenizer
from stylisticbias_dev.tiny_archs.llava_next import _MISTRAL_TEMPLATE


def build(out: Path, seed: int = 0, *, image_size: int = 64, patch: int = 4) -> Path:
    """Pixtral (``LlavaForConditionalGeneration`` + Pixtral vision tower + Mistral decoder).

    ``(s/p)^2`` patch tokens with an ``[IMG_BREAK]`` per row and ``[IMG_END]``: 272 image
    tokens for a square image at the default 64 px / 4 px.
    """
    import torch
    from transformers import (
        LlavaConfig,
        LlavaForConditionalGeneration,
        PixtralImageProcessorPil,
        PixtralProcessor,
    )

    template = _MISTRAL_TEMPLATE.replace("<image>\n", "[IMG]")
    tok = _tokenizer(
        ["[IMG]", "[IMG_BREAK]", "[IMG_END]", "[INST]", "[/INST]"],
        bos="<s>",
        eos="</s>",
        pad="<pad>",
        chat_template=template,
    )
    improc = PixtralImageProcessorPil(
        size={"longest_edge": image_size}, patch_size={"height": patch, "width": patch}
    )
    processor = PixtralProcessor(
        image_processor=improc, tokenizer=tok, patch_size=patch, chat_template=template
    )
    cfg = LlavaConfig(
        text_config={"model_type": "mistral", **_text_cfg(len(tok))},
        vision_config={
            "model_type": "pixtral",
            "image_size": image_size,
            "patch_size": patch,
            "hidden_size": 64,
            "intermediate_size": 256,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "head_dim": 16,
        },
        image_token_index=tok.convert_tokens_to_ids("[IMG]"),
        vision_feature_layer=-1,
        vision_feature_select_strategy="full",
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(cfg).eval()
    return _finish(model, processor, "[/INST]", out, seed)
