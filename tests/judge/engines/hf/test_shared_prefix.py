"""Shared-prefix attention (one batch-1 prefix KV for all suffix rows) vs the per-row copy path.

Tiny random-weight checkpoints, CPU, float32: same logits and same exact distributions as the
copy path; the suffix batch holds only suffix keys/values; unsupported setups fall back.
"""

from __future__ import annotations

import logging

import pytest
import torch
from test_hf_engine_equivalence import ARCHS, _images, cached_engine
from tiny_arch_params import arch_params

from stylisticbias.judge.engines.hf.engine import HFJudgeEngine
from stylisticbias.judge.engines.hf.exact import _forward, cache_repeat, prefill
from stylisticbias.judge.engines.hf.exact import suffix_logits as logits_of
from stylisticbias.judge.engines.hf.prompts import split_prompts
from stylisticbias.judge.engines.hf.shared_prefix import (
    ATTN_NAME,
    SharedPrefixCache,
    SharedPrefixUnsupported,
    cache_unsupported_reason,
)
from stylisticbias.judge.protocol.prompts import encode

#: Tiny architectures whose prefix cache cannot be shared (the engine falls back to the copy path).
NO_SHARING = {"gemma4": "KV shared across layers (Gemma-4 E-models)"}


@pytest.fixture(params=ARCHS)
def arch(request) -> str:
    if request.param in NO_SHARING:
        pytest.skip(f"{request.param}: {NO_SHARING[request.param]}; see test_kv_sharing_falls_back")
    return request.param


def _split(eng: HFJudgeEngine, img):
    return split_prompts(eng.model, eng.processor, img, [s.text for s in eng.specs], eng._rendered)


def _twin(eng: HFJudgeEngine, sharing: str) -> HFJudgeEngine:
    other = HFJudgeEngine(
        eng.model_cfg, {**eng.engine_cfg, "prefix_sharing": sharing}, eng.judge_cfg, eng.benchmark
    )
    other.model, other.processor, other._rendered = eng.model, eng.processor, eng._rendered
    return other


@pytest.mark.parametrize("arch", arch_params(fast=("gemma3",)), indirect=True)
@torch.inference_mode()
def test_shared_logits_equal_copy_and_full_forward(arch, benchmark) -> None:
    eng = cached_engine(arch, benchmark)
    eng.distributions(_images()[0])  # installs and verifies the shared attention
    assert eng._shared_ok is True
    assert eng.model.config.get_text_config()._attn_implementation == ATTN_NAME
    img = _images()[2]
    prompts = _split(eng, img)
    cache = prefill(eng.model, prompts.prefix_inputs)
    shared = SharedPrefixCache.from_prefix(cache)
    by_len: dict[int, list[int]] = {}
    for k, s in enumerate(prompts.suffixes):
        by_len.setdefault(len(s), []).append(k)
    group = max(by_len.values(), key=len)[:6]
    sfx = [prompts.suffixes[k] for k in group]
    got = logits_of(eng.model, shared, sfx)
    torch.testing.assert_close(got, logits_of(eng.model, cache, sfx), atol=1e-5, rtol=1e-5)
    enc = encode(eng.processor, eng.specs[group[0]].text, img)
    want = eng.model(**enc).logits[0, -1].float()
    torch.testing.assert_close(got[0], want, atol=1e-4, rtol=1e-4)
    # a branch step on top (q = 1, rows selected and duplicated) still matches
    rows = torch.tensor([0, 0, 2, 1])
    nxt = torch.tensor([[5], [7], [5], [9]])
    a = cache_repeat(shared, len(sfx))
    b = cache_repeat(cache, len(sfx))
    ids = torch.tensor(sfx)
    _forward(eng.model, ids, a), _forward(eng.model, ids, b)
    from stylisticbias.judge.engines.hf.exact import cache_select

    la = _forward(eng.model, nxt, cache_select(a, rows))
    lb = _forward(eng.model, nxt, cache_select(b, rows))
    torch.testing.assert_close(la, lb, atol=1e-5, rtol=1e-5)


@torch.inference_mode()
@pytest.mark.parametrize("arch", arch_params(fast=("internvl",)), indirect=True)
def test_shared_distributions_equal_copy(arch, benchmark) -> None:
    eng = cached_engine(arch, benchmark)
    copy_eng = _twin(eng, "copy")
    for img in _images()[:2]:
        shared, _ = eng.distributions(img)
        copied, _ = copy_eng.distributions(img)
        assert eng._shared_ok is True and copy_eng._shared_ok is None
        for s, c in zip(shared, copied):
            for key in ("positive", "negative", "invalid", "undecided"):
                assert s.p[key] == pytest.approx(c.p[key], abs=1e-5)


@torch.inference_mode()
def test_suffix_batch_does_not_copy_the_prefix(arch, benchmark) -> None:
    """Cache bytes of a B-row suffix batch: suffix K/V only; the prefix tensors are shared."""
    eng = cached_engine(arch, benchmark)
    prompts = _split(eng, _images()[0])
    cache = prefill(eng.model, prompts.prefix_inputs)
    length = len(prompts.suffixes[0])
    sfx = [s for s in prompts.suffixes if len(s) == length]
    n = len(sfx)
    assert n >= 2
    rows = cache_repeat(SharedPrefixCache.from_prefix(cache), n)
    _forward(eng.model, torch.tensor(sfx), rows)
    prefix_bytes = sum(la.keys.numel() * la.keys.element_size() * 2 for la in cache.layers)
    per_token = prefix_bytes // len(prompts.prefix_ids)
    assert rows.prefix_bytes() == prefix_bytes
    assert rows.suffix_bytes() == n * length * per_token  # no per-row prefix
    for la, src in zip(rows.layers, cache.layers):
        assert la.prefix_keys.data_ptr() == src.keys.data_ptr()  # the very same storage
    # the copy path holds the prefix once per row
    copied = cache_repeat(cache, n)
    _forward(eng.model, torch.tensor(sfx), copied)
    copy_bytes = sum(la.keys.numel() * la.keys.element_size() * 2 for la in copied.layers)
    assert copy_bytes == n * (len(prompts.prefix_ids) + length) * per_token
    assert copy_bytes - rows.suffix_bytes() == n * rows.prefix_bytes()  # n prefix copies


@torch.inference_mode()
def test_kv_sharing_falls_back(benchmark) -> None:
    """Gemma-4 reuses K/V of earlier layers: no shared template; the engine uses the copy path."""
    eng = cached_engine("gemma4", benchmark)
    prompts = _split(eng, _images()[0])
    cache = prefill(eng.model, prompts.prefix_inputs)
    assert cache_unsupported_reason(cache) is not None
    with pytest.raises(SharedPrefixUnsupported):
        SharedPrefixCache.from_prefix(cache)
    copy_eng = _twin(eng, "copy")
    shared, _ = eng.distributions(_images()[0])
    copied, _ = copy_eng.distributions(_images()[0])
    assert eng._shared_ok is False
    for s, c in zip(shared, copied):
        for key in ("positive", "negative", "invalid", "undecided"):
            assert s.p[key] == pytest.approx(c.p[key], abs=1e-9)


@torch.inference_mode()
def test_unsupported_setups_fall_back(benchmark, caplog) -> None:
    eng = cached_engine("llava_next", benchmark)
    prompts = _split(eng, _images()[0])
    cache = prefill(eng.model, prompts.prefix_inputs)
    window = eng.model.config.get_text_config().sliding_window
    assert cache_unsupported_reason(cache, total_len=100) is None
    assert "sliding window" in cache_unsupported_reason(cache, total_len=window + 1)
    with pytest.raises(SharedPrefixUnsupported):
        SharedPrefixCache.from_prefix(cache, total_len=window + 1)
    # the engine falls back to the copy path (logged) and gives the copy path's result
    eng.distributions(_images()[0])
    short = _twin(eng, "shared")
    short.decoding_params.max_new_tokens = window  # prompts would outgrow the window
    with caplog.at_level(logging.INFO, logger="stylisticbias.judge.engines.hf.engine"):
        assert short._shared_template(cache, prompts) is None
    assert "prefix sharing off" in caplog.text
    with pytest.raises(Exception, match="prefix_sharing"):
        _twin(eng, "nope")
