"""Tiny Gemma-3 (``Gemma3ForConditionalGeneration``): SigLIP tower pooled to 256 tokens."""

from __future__ import annotations

from pathlib import Path

from stylisticbias_dev.tiny import _finish, _text_cfg, _tokenizer

_GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<start_of_turn>"
    "{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<start_of_image>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def build(out: Path, seed: int = 0, *, image_size: int = 64, patch: int = 4) -> Path:
    """Gemma-3 (SigLIP tower, pooled to a fixed token count, bidirectional image attention).

    The generation prompt ends with ``"\n"`` after ``<start_of_turn>model``; 256 image tokens.
    """
    import torch
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    specials = [
        "<start_of_image>",
        "<end_of_image>",
        "<image_soft_token>",
        "<start_of_turn>",
        "<end_of_turn>",
    ]
    tok = _tokenizer(
        specials,
        bos="<bos>",
        eos="<end_of_turn>",
        pad="<pad>",
        chat_template=_GEMMA_TEMPLATE,
        extra={
            "image_token": "<image_soft_token>",
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
        },
    )
    n_img = 256
    improc = Gemma3ImageProcessorPil(size={"height": image_size, "width": image_size})
    processor = Gemma3Processor(
        image_processor=improc, tokenizer=tok, chat_template=_GEMMA_TEMPLATE, image_seq_length=n_img
    )
    text = _text_cfg(len(tok), sliding_window=4096, query_pre_attn_scalar=16)
    cfg = Gemma3Config(
        text_config=text,
        vision_config={
            "model_type": "siglip_vision_model",
            "image_size": image_size,
            "patch_size": patch,
            "hidden_size": 64,
            "intermediate_size": 256,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
        },
        mm_tokens_per_image=n_img,
        boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
        eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
        image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"),
        tie_word_embeddings=False,
    )
    cfg.text_config.tie_word_embeddings = False
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(cfg).eval()
    # Gemma normalises each block's output before adding it to the residual stream (weights act
    # as 1 + w); damp those norms so the planted grammar is not drowned by the random blocks.
    with torch.no_grad():
        for layer in model.model.language_model.layers:
            layer.post_attention_layernorm.weight.fill_(-0.97)
            layer.post_feedforward_layernorm.weight.fill_(-0.97)
    return _finish(model, processor, "\n", out, seed)
