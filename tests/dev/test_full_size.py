"""Full-size specs of the GPU benchmark: the real shapes, checked without allocating them."""

from __future__ import annotations

import pytest

from stylisticbias.errors import StylisticBiasError
from stylisticbias_dev.full_size import (
    SPECS,
    build,
    count_parameters,
    damp_residual,
    model_config,
)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_parameter_count_matches_the_hub_checkpoint(name: str) -> None:
    # counted on the meta device: the transcribed config has the hub model's size (to 0.5%)
    n = count_parameters(name)
    assert n / 1e9 == pytest.approx(SPECS[name].params_billion, rel=5e-3)


def test_real_shapes() -> None:
    q = model_config("qwen3-vl-8b")
    assert q.text_config.vocab_size == 151936 and q.text_config.num_hidden_layers == 36
    assert q.vision_config.out_hidden_size == q.text_config.hidden_size == 4096
    ll = model_config("llava-v1-6-mistral-7b")
    assert ll.text_config.vocab_size == 32064 and ll.vision_config.image_size == 336
    assert ll.vision_feature_layer == -2


@pytest.mark.parametrize(
    ("name", "tokens"), [("qwen3-vl-8b", 1024), ("llava-v1-6-mistral-7b", 2928)]
)
def test_tiny_scale_keeps_the_real_image_token_count(name: str, tokens: int) -> None:
    from PIL import Image

    model, processor = build(name, device="cpu", dtype="float32", scale="tiny")
    assert sum(p.numel() for p in model.parameters()) < 5e6
    msg = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "hi"}]}]
    text = processor.apply_chat_template(msg, add_generation_prompt=True, tokenize=False)
    enc = processor(
        images=[Image.new("RGB", (1024, 1024), "gray")], text=[text], return_tensors="pt"
    )
    image_id = (
        model.config.image_token_id if name == "qwen3-vl-8b" else model.config.image_token_index
    )
    assert int((enc["input_ids"] == image_id).sum()) == tokens


def test_unknown_names() -> None:
    with pytest.raises(StylisticBiasError, match=r"valid: .*qwen3-vl-8b"):
        count_parameters("gpt-17")
    with pytest.raises(StylisticBiasError, match="valid: full, tiny"):
        model_config("qwen3-vl-8b", "huge")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_residual_damping_scales_only_the_language_models_branch_outputs(name: str) -> None:
    import torch

    plain, _ = build(name, device="cpu", dtype="float32", scale="tiny", residual_scale=1.0)
    damped, _ = build(name, device="cpu", dtype="float32", scale="tiny", residual_scale=0.25)
    a, b = dict(plain.named_parameters()), dict(damped.named_parameters())
    scaled = [
        k for k in a if "language_model" in k and k.endswith(("o_proj.weight", "down_proj.weight"))
    ]
    assert len(scaled) == 2 * plain.config.text_config.num_hidden_layers
    for k in a:
        want = a[k] * 0.25 if k in scaled else a[k]
        assert torch.equal(b[k], want), k


def test_damp_residual_names_what_it_did_not_find() -> None:
    import torch

    with pytest.raises(StylisticBiasError, match=r"no self_attn\.o_proj / mlp\.down_proj"):
        damp_residual(torch.nn.Linear(2, 2), 0.5)
