"""Tiny Gemma-4 (``Gemma4ForConditionalGeneration``), shaped like Gemma-4-E4B.

Per-layer input embeddings, sliding + full attention layers (the full ones with their own head
size and proportional RoPE), KV shared across the last layers, final logit soft-capping and
bidirectional attention within an image; the vision tower pools patches to a soft-token budget.
"""

from __future__ import annotations

from pathlib import Path

from stylisticbias_dev.tiny import _finish, _text_cfg, _tokenizer

_GEMMA4_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<start_of_turn>"
    "{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<|image|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def build(
    out: Path, seed: int = 0, *, patch: int = 4, pool: int = 2, max_soft_tokens: int = 70
) -> Path:
    """Gemma-4 at ``patch * pool`` px per soft token, at most ``max_soft_tokens`` per image.

    The image placeholder ``<|image|>`` expands to ``<|image>`` + soft tokens + ``<image|>``
    (the budget must be one of 70, 140, 280, 560, 1120; 64 soft tokens for a 64x64 image).
    """
    import torch
    from transformers import Gemma4Config, Gemma4ForConditionalGeneration
    from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil

    from stylisticbias.judge.engines.hf.processors import TinyGemma4Processor

    mm = {
        "image_token": "<|image|>",
        "boi_token": "<|image>",
        "eoi_token": "<image|>",
        "audio_token": "<|audio|>",
        "boa_token": "<|audio>",
        "eoa_token": "<audio|>",
    }
    tok = _tokenizer(
        ["<start_of_turn>", "<end_of_turn>", *mm.values()],
        bos="<bos>",
        eos="<end_of_turn>",
        pad="<pad>",
        extra=mm,
        chat_template=_GEMMA4_TEMPLATE,
    )
    improc = Gemma4ImageProcessorPil(
        patch_size=patch, pooling_kernel_size=pool, max_soft_tokens=max_soft_tokens
    )
    processor = TinyGemma4Processor(
        image_processor=improc,
        tokenizer=tok,
        chat_template=_GEMMA4_TEMPLATE,
        image_seq_length=max_soft_tokens,
    )
    ids = tok.convert_tokens_to_ids
    text = _text_cfg(
        len(tok),
        num_hidden_layers=4,
        layer_types=["sliding_attention", "full_attention"] * 2,
        num_kv_shared_layers=2,
        sliding_window=512,
        global_head_dim=32,
        hidden_size_per_layer_input=16,
        vocab_size_per_layer_input=len(tok),
        final_logit_softcapping=30.0,
        use_bidirectional_attention="vision",
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    cfg = Gemma4Config(
        text_config=text,
        vision_config={
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "head_dim": 16,
            "patch_size": patch,
            "pooling_kernel_size": pool,
            "position_embedding_size": 256,
        },
        audio_config=None,
        boi_token_id=ids("<|image>"),
        eoi_token_id=ids("<image|>"),
        image_token_id=ids("<|image|>"),
        video_token_id=ids("<|video|>"),
        boa_token_id=ids("<|audio>"),
        eoa_token_index=ids("<audio|>"),
        audio_token_id=ids("<|audio|>"),
        tie_word_embeddings=False,
    )
    cfg.text_config.tie_word_embeddings = False
    torch.manual_seed(seed)
    model = Gemma4ForConditionalGeneration(cfg).eval()
    # Gemma-4 normalises each block's output before adding it to the residual stream; damp those
    # norms (weights act as w, not 1 + w as in Gemma-3) so the random blocks do not drown the
    # planted grammar.
    with torch.no_grad():
        for layer in model.model.language_model.layers:
            for norm in (
                "post_attention_layernorm",
                "post_feedforward_layernorm",
                "post_per_layer_input_norm",
            ):
                getattr(layer, norm).weight.fill_(0.03)
    return _finish(model, processor, "\n", out, seed, sharpness=3.0)
