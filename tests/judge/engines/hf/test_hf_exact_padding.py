"""The left-padded suffix batch of the exact engine (tiny random-weight checkpoints, CPU, fp32).

(a) a padded row's logits == its own unpadded prompt's (prefix reuse + padding == the full,
unpadded forward); (b) padded batches give the distributions of the per-length batches of the
previous layout, on the shared-prefix and on the copy path, and a suffix's distribution does
not depend on which (and how long) suffixes share its batch; (c) forward calls no longer grow
with the number of distinct suffix lengths; (d) ``auto`` batch sizes follow the free memory.
Tolerances: 1e-5 in probability (the effects the study measures are 0.01-0.02).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from tiny_arch_params import arch_params

from stylisticbias.judge.engines.hf.batch_sizing import choose
from stylisticbias.judge.engines.hf.engine import HFJudgeEngine
from stylisticbias.judge.engines.hf.exact import (
    ExpandStats,
    _forward,
    cache_repeat,
    expand,
    expand_all,
    prefill,
    suffix_logits,
)
from stylisticbias.judge.engines.hf.prompts import split_prompts
from stylisticbias.judge.engines.hf.shared_prefix import SharedPrefixCache, unsupported_reason
from stylisticbias_dev import tiny

ROOT = Path(__file__).resolve().parents[4]
TINY_DIR = ROOT / "tests" / ".tiny_models"
PADDING_ARCHS = ("llava_next", "qwen3_vl", "gemma3", "internvl", "pixtral")
ARCHS = [
    pytest.param(
        a,
        marks=pytest.mark.skipif(
            tiny.missing_requirement(a) is not None,
            reason=f"{a} processor needs {tiny.missing_requirement(a)}",
        ),
    )
    for a in PADDING_ARCHS
]
_ENGINES: dict[str, HFJudgeEngine] = {}


def _engine(arch: str, benchmark) -> HFJudgeEngine:
    if arch not in _ENGINES:
        path = tiny.ensure_built(arch, TINY_DIR / arch)
        eng = HFJudgeEngine(
            {"name": f"tiny-{arch}", "hub_id": str(path), "dtype": "float32"},
            {
                "name": "hf",
                "decoding": "exact",
                "prune_threshold": 1e-6,
                "device": "cpu",
                "suffix_batch_size": 100,
                "branch_batch_size": 256,
            },
            {
                "orderings": [1, 2, 3, 4],
                "seeds": [1],
                "temperature": 1.0,
                "max_new_tokens": 16,
                "scenarios": [1, 5, 21, 23],
            },
            benchmark,
        )
        eng.setup("cpu")
        _ENGINES[arch] = eng
    return _ENGINES[arch]


def _prompts(eng: HFJudgeEngine):
    rs = np.random.RandomState(1)
    img = Image.fromarray((rs.rand(56, 72, 3) * 255).astype("uint8"))
    return split_prompts(eng.model, eng.processor, img, [s.text for s in eng.specs], eng._rendered)


def _caches(eng: HFJudgeEngine, cache, prompts):
    out = [("copy", cache)]
    total = len(prompts.prefix_ids) + max(len(x) for x in prompts.suffixes) + 16
    if unsupported_reason(eng.model) is None or eng._shared_ok:
        from stylisticbias.judge.engines.hf.shared_prefix import install

        if install(eng.model):
            out.append(("shared", SharedPrefixCache.from_prefix(cache, total)))
    return out


def _assert_same(a, b, tol: float = 1e-5) -> None:
    for v in ("a", "b", "invalid"):
        assert a.mass[v] == pytest.approx(b.mass[v], abs=tol), v
    assert a.undecided == pytest.approx(b.undecided, abs=tol)


@pytest.fixture(params=ARCHS)
def arch(request) -> str:
    return request.param


@torch.inference_mode()
def test_padded_rows_equal_their_unpadded_prompts(arch, benchmark) -> None:
    """(a) the last-token logits of a left-padded row == that suffix run alone."""
    eng = _engine(arch, benchmark)
    prompts = _prompts(eng)
    lengths = sorted({len(s) for s in prompts.suffixes})
    assert len(lengths) >= 2, "the test needs suffixes of different lengths"
    short = min(prompts.suffixes, key=len)
    long_ = max(prompts.suffixes, key=len)
    cache = prefill(eng.model, prompts.prefix_inputs)
    p_len, width = len(prompts.prefix_ids), len(long_)
    for kind, c in _caches(eng, cache, prompts):
        want = torch.cat([suffix_logits(eng.model, c, [s]) for s in (short, long_)])
        ids = torch.tensor([[short[0]] * (width - len(short)) + list(short), list(long_)])
        real = torch.tensor([[0] * (width - len(short)) + [1] * len(short), [1] * width])
        attn = torch.cat([torch.ones((2, p_len), dtype=torch.long), real], 1)
        pos = (p_len - 1 + real.cumsum(1)).clamp_min(p_len)
        got = _forward(eng.model, ids, cache_repeat(c, 2), attn, pos)
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4, msg=kind)


@torch.inference_mode()
@pytest.mark.parametrize("arch", arch_params(PADDING_ARCHS, fast=("llava_next",)), indirect=True)
def test_padded_batch_equals_length_groups_and_batch_composition(arch, benchmark) -> None:
    """(b) one padded batch == one batch per length (previous layout), shared and copy path;
    a suffix alone == the same suffix in the padded batch (with a binding per-suffix cap)."""
    eng = _engine(arch, benchmark)
    prompts = _prompts(eng)
    tok = eng.processor.tokenizer
    params = replace(eng.decoding_params, max_branches_per_suffix=3)
    cache = prefill(eng.model, prompts.prefix_inputs)
    for kind, c in _caches(eng, cache, prompts):
        s_pad, s_grp = ExpandStats(), ExpandStats()
        padded = expand_all(eng.model, tok, c, prompts, params, 100, s_pad, padding=True)
        grouped = expand_all(eng.model, tok, c, prompts, params, 100, s_grp, padding=False)
        assert len(padded) == len(grouped) == len(prompts.suffixes)
        for a, b in zip(padded, grouped):
            _assert_same(a, b)
        assert any(d.mass["a"] > 0.01 and d.mass["b"] > 0.01 for d in padded), kind
        # (c) forward calls: 1 suffix pass + one per depth, vs one per length group and depth
        n_len = len({len(s) for s in prompts.suffixes})
        steps = [p for p, _r, _q in s_pad.calls if p.startswith("step")]
        assert len(steps) == len(set(steps)) and s_pad.forward_calls == 1 + len(steps)
        assert s_grp.forward_calls > s_pad.forward_calls
        assert [p for p, _r, _q in s_pad.calls].count("suffix") == 1
        assert [p for p, _r, _q in s_grp.calls].count("suffix") == n_len
        # composition: the longest suffix alone, and with the shortest ones (padded) around it
        k_long = max(range(len(prompts.suffixes)), key=lambda k: len(prompts.suffixes[k]))
        alone = expand(eng.model, tok, c, prompts.prefix_ids, [prompts.suffixes[k_long]], params)[0]
        _assert_same(alone, padded[k_long])
        k_short = min(range(len(prompts.suffixes)), key=lambda k: len(prompts.suffixes[k]))
        pair = expand(
            eng.model,
            tok,
            c,
            prompts.prefix_ids,
            [prompts.suffixes[k_short], prompts.suffixes[k_long]],
            params,
        )
        _assert_same(pair[0], padded[k_short])
        _assert_same(pair[1], alone)


@pytest.mark.slow  # tiny batches (3 suffixes, 2 branches): minutes; batch sizes also above
@torch.inference_mode()
def test_engine_rows_do_not_depend_on_padding_or_batch_sizes(benchmark) -> None:
    """The engine's p_* with padding/auto sizes == without padding and with tiny batches."""
    eng = _engine("qwen3_vl", benchmark)
    rs = np.random.RandomState(2)
    img = Image.fromarray((rs.rand(64, 64, 3) * 255).astype("uint8"))
    ref, _ = eng.distributions(img)
    other = HFJudgeEngine(
        eng.model_cfg,
        {**eng.engine_cfg, "suffix_padding": False, "suffix_batch_size": 3, "branch_batch_size": 2},
        eng.judge_cfg,
        eng.benchmark,
    )
    other.model, other.processor, other._rendered = eng.model, eng.processor, eng._rendered
    got, _ = other.distributions(img)
    for a, b in zip(ref, got):
        for k in ("positive", "negative", "invalid", "undecided"):
            assert a.p[k] == pytest.approx(b.p[k], abs=1e-5)


def test_auto_batch_sizes_follow_free_memory(benchmark) -> None:
    """(d) more free memory -> larger batches (capped); tiny memory -> 1."""
    model = _engine("llava_next", benchmark).model
    small = choose(model, 30, 16, available=50 * 2**20)
    big = choose(model, 30, 16, available=80 * 2**30)
    huge = choose(model, 30, 16, available=141 * 2**30)
    assert 1 <= small.branch_batch_size < big.branch_batch_size <= huge.branch_batch_size
    assert big.suffix_batch_size == huge.suffix_batch_size == 100
    assert choose(model, 30, 16, available=0).branch_batch_size == 1
    eng = HFJudgeEngine(
        {"name": "tiny-llava_next"},
        {"name": "hf", "suffix_batch_size": "auto", "branch_batch_size": "auto"},
        {"scenarios": [1]},
        benchmark,
    )
    assert eng._auto_sizes == {"suffix_batch_size", "branch_batch_size"}
    from stylisticbias.errors import StylisticBiasError

    with pytest.raises(StylisticBiasError, match="branch_batch_size"):
        HFJudgeEngine({"name": "x"}, {"name": "hf", "branch_batch_size": "big"}, {}, benchmark)


def test_auto_batch_sizes_read_a_heterogeneous_config_per_layer(benchmark) -> None:
    """Gemma 4's sliding and global layers differ in head size: transformers 5 refuses the
    global ``head_dim``, so the row estimate sums the KV cache layer by layer (it used to raise
    on the first image with ``suffix_batch_size: auto``, the engine's default)."""
    from stylisticbias.judge.engines.hf.batch_sizing import row_bytes

    model = _engine("gemma4", benchmark).model
    tc = getattr(model.config, "text_config", None) or model.config
    assert tc.is_heterogeneous
    layers = [tc.per_layer_config[i] for i in range(tc.num_hidden_layers)]
    assert len({lc.head_dim for lc in layers}) > 1  # the case this test is about
    elem = next(model.parameters()).element_size()
    kv = sum(2 * lc.num_key_value_heads * lc.head_dim * elem for lc in layers)
    act = max(
        (4 * lc.hidden_size + 3 * lc.intermediate_size + 2 * lc.num_attention_heads * lc.head_dim)
        * elem
        for lc in layers
    )
    suffix, branch = row_bytes(model, 30, 16)
    assert suffix == 30 * (act + kv) + tc.vocab_size * 4
    assert branch == 16 * tc.vocab_size + (30 + 16) * kv + act
    assert choose(model, 30, 16, available=80 * 2**30).suffix_batch_size == 100
