"""Proof tests of the hf engine on tiny random-weight checkpoints (CPU, float32).

(a) prefix KV reuse == a full forward pass; (b) batch composition and image order change
nothing; (c) a slow, powered sampling check: at the production settings, each outcome's
frequency in enough ``generate()`` draws to detect a 0.02 error with 80% power matches the
exact probability (exact binomial tests). The decisive check of (c) is deterministic:
``tests/judge/test_exact_enumeration.py`` (full enumeration, 1e-5). (a)/(b) run at temperature
1.0, where the tiny models spread their answers over more branches.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from tiny_arch_params import arch_params

from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.judge.engines.hf.engine import HFJudgeEngine
from stylisticbias.judge.engines.hf.exact import (
    ExpandStats,
    expand,
    prefill,
    suffix_logits,
)
from stylisticbias.judge.engines.hf.prompts import split_prompts
from stylisticbias.judge.engines.hf.shared_prefix import (
    SharedPrefixCache,
    SharedPrefixUnsupported,
    unsupported_reason,
)
from stylisticbias.judge.protocol.parsing import classify
from stylisticbias.judge.protocol.prompts import encode, render
from stylisticbias.schemas import JUDGMENTS, validate
from stylisticbias_dev import tiny

ROOT = Path(__file__).resolve().parents[4]
TINY_DIR = ROOT / "tests" / ".tiny_models"
TEST_T = 1.0
ARCHS = [
    pytest.param(
        a,
        marks=pytest.mark.skipif(
            tiny.missing_requirement(a) is not None,
            reason=f"{a} processor needs {tiny.missing_requirement(a)}",
        ),
    )
    for a in tiny.ARCHITECTURES
]


def _images() -> list[Image.Image]:
    rs = np.random.RandomState(0)
    out = [Image.new("RGB", (64, 64), c) for c in [(200, 150, 120), (40, 40, 40)]]
    out.append(Image.fromarray((rs.rand(48, 80, 3) * 255).astype("uint8")))
    return out


def _engine(
    arch: str,
    benchmark,
    decoding: str = "exact",
    prune: float = 1e-6,
    temperature: float = TEST_T,
    **judge,
) -> HFJudgeEngine:
    path = tiny.ensure_built(arch, TINY_DIR / arch)
    model_cfg = {"name": f"tiny-{arch}", "hub_id": str(path), "dtype": "float32"}
    judge_cfg = {
        "orderings": [1, 2, 3, 4],
        "seeds": [1, 2, 3],
        "temperature": temperature,
        "max_new_tokens": 16,
        "scenarios": [1, 23],
        **judge,
    }
    engine_cfg = {"name": "hf", "decoding": decoding, "prune_threshold": prune, "device": "cpu"}
    eng = HFJudgeEngine(model_cfg, engine_cfg, judge_cfg, benchmark)
    eng.setup("cpu")
    return eng


_ENGINES: dict[tuple[str, str], HFJudgeEngine] = {}


@pytest.fixture(params=ARCHS)
def arch(request) -> str:
    return request.param


def cached_engine(arch: str, benchmark) -> HFJudgeEngine:
    if (arch, "exact") not in _ENGINES:
        _ENGINES[(arch, "exact")] = _engine(arch, benchmark)
    return _ENGINES[(arch, "exact")]


def test_chat_template_has_prompt_and_image(arch, benchmark) -> None:
    eng = cached_engine(arch, benchmark)
    text = eng.specs[0].text
    rendered = render(eng.processor, text)
    assert text in rendered
    assert (
        eng.processor.image_token in rendered
        or eng.processor.tokenizer.decode(
            [eng.model.config.image_token_id]
            if hasattr(eng.model.config, "image_token_id")
            else [eng.model.config.image_token_index]
        )
        in rendered
    )


def test_prefix_split_reproduces_processor_tokens(arch, benchmark) -> None:
    eng = cached_engine(arch, benchmark)
    img = _images()[2]
    prompts = split_prompts(
        eng.model, eng.processor, img, [s.text for s in eng.specs], eng._rendered
    )
    assert prompts.image_tokens > 0
    for k, spec in enumerate(eng.specs):
        full = encode(eng.processor, spec.text, img)["input_ids"][0].tolist()
        assert prompts.full_ids(k) == full


@torch.inference_mode()
def test_prefix_reuse_equals_full_forward(arch, benchmark) -> None:
    """(a) shared-prefix KV cache + suffix == one forward pass over the whole prompt."""
    eng = cached_engine(arch, benchmark)
    img = _images()[0]
    prompts = split_prompts(
        eng.model, eng.processor, img, [s.text for s in eng.specs], eng._rendered
    )
    cache = prefill(eng.model, prompts.prefix_inputs)
    for k in (0, 1, 5):
        got = suffix_logits(eng.model, cache, [prompts.suffixes[k]])[0]
        enc = encode(eng.processor, eng.specs[k].text, img)
        want = eng.model(**enc).logits[0, -1].float()
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    # the prefix cache was not modified by the suffix runs
    again = suffix_logits(eng.model, cache, [prompts.suffixes[0]])[0]
    torch.testing.assert_close(again, suffix_logits(eng.model, cache, [prompts.suffixes[0]])[0])


@torch.inference_mode()
def test_prefix_cache_survives_another_image(arch, benchmark) -> None:
    """(a) an image's prefix cache stays valid after another image's prefill (and ``generate``).

    Qwen-VL models keep their M-RoPE offsets as model state, overwritten by every forward from
    position 0; ``prefill`` records them with the cache and the suffix runs restore them.
    """
    eng = cached_engine(arch, benchmark)
    a, b = _images()[0], _images()[2]  # different sizes: different image grids
    texts = [s.text for s in eng.specs]
    want = eng.model(**encode(eng.processor, texts[0], a)).logits[0, -1].float()
    pa = split_prompts(eng.model, eng.processor, a, texts, eng._rendered)
    cache = prefill(eng.model, pa.prefix_inputs)
    caches = [cache]
    try:
        caches.append(SharedPrefixCache.from_prefix(cache))
        unsupported = unsupported_reason(eng.model)
    except SharedPrefixUnsupported as exc:
        unsupported = str(exc)
    if unsupported:
        caches = caches[:1]
    pb = split_prompts(eng.model, eng.processor, b, texts, eng._rendered)
    prefill(eng.model, pb.prefix_inputs)
    for c in caches:
        got = suffix_logits(eng.model, c, [pa.suffixes[0]])[0]
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


@torch.inference_mode()
@pytest.mark.parametrize("arch", arch_params(fast=("gemma4",)), indirect=True)
def test_batch_composition_does_not_change_distributions(arch, benchmark) -> None:
    """(b) a suffix scored alone == the same suffix scored in a batch with others.

    Run with a tight per-suffix frontier cap, so that the cap binds: it is per suffix, so the
    branches it drops do not depend on which suffixes share the batch.
    """
    eng = cached_engine(arch, benchmark)
    params = replace(eng.decoding_params, max_branches_per_suffix=2)
    img = _images()[1]
    prompts = split_prompts(
        eng.model, eng.processor, img, [s.text for s in eng.specs], eng._rendered
    )
    cache = prefill(eng.model, prompts.prefix_inputs)
    by_len: dict[int, list[int]] = {}
    for k, s in enumerate(prompts.suffixes):
        by_len.setdefault(len(s), []).append(k)
    group = max(by_len.values(), key=len)
    assert len(group) >= 2
    tok = eng.processor.tokenizer
    stats = ExpandStats()
    batch = expand(
        eng.model,
        tok,
        cache,
        prompts.prefix_ids,
        [prompts.suffixes[k] for k in group],
        params,
        stats=stats,
    )
    assert stats.capped_mass > 0  # the cap binds in this batch
    for j, k in list(enumerate(group))[:2]:
        alone = expand(eng.model, tok, cache, prompts.prefix_ids, [prompts.suffixes[k]], params)[0]
        for v in ("a", "b", "invalid"):
            assert alone.mass[v] == pytest.approx(batch[j].mass[v], abs=1e-6)
        assert alone.undecided == pytest.approx(batch[j].undecided, abs=1e-6)


@pytest.mark.parametrize("arch", arch_params(fast=("qwen3_vl",)), indirect=True)
def test_image_order_does_not_change_rows(arch, benchmark) -> None:
    """(b) judging images in a different order/batch gives identical p_* per row."""
    eng = _engine(arch, benchmark, prune=1e-3, scenarios=[1])
    imgs = _images()
    items = [ImageItem(f"img{i}", f"face{i}", f"/x/{i}.png", True) for i in range(3)]
    a = eng.judge(items, imgs)
    b = eng.judge(items[::-1], imgs[::-1])
    c = pd_concat([eng.judge([items[i]], [imgs[i]]) for i in (1, 0, 2)])
    key = ["image_id", "scenario_id", "ordering", "seed"]
    cols = ["p_pos", "p_neg", "p_invalid", "p_undecided"]
    a, b, c = (x.sort_values(key).reset_index(drop=True) for x in (a, b, c))
    np.testing.assert_allclose(a[cols].to_numpy(), b[cols].to_numpy(), atol=1e-9)
    np.testing.assert_allclose(a[cols].to_numpy(), c[cols].to_numpy(), atol=1e-9)
    validate(a, JUDGMENTS, "exact rows")
    assert np.allclose(a[cols].sum(axis=1), 1.0)
    assert (a["seed"] == 0).all() and a["response"].isna().all()
    assert eng.last_stats["image_tokens_per_image"][0] > 0


def pd_concat(frames):
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


# ---- (c) exact vs generate: a powered sampling check (the deterministic one is
# tests/judge/test_exact_enumeration.py) --------------------------------------------------------

#: an error of this size in any outcome probability is detected with >= 80% power
DETECT = 0.02
POWER = 0.8
#: per-outcome two-sided level (5 architectures x 3 cells x 3 outcomes = 45 tests: a correct
#: engine fails the whole slow test with probability <= 4.5%)
ALPHA = 1e-3


def draws_for_power(p: float) -> int:
    """Draws so that a binomial test at ``ALPHA`` detects ``|error| = DETECT`` with ``POWER``.

    Normal approximation with the larger variance of ``p`` and ``p +- DETECT``:
    ``n = ((z_{1-ALPHA/2} + z_POWER) sd / DETECT)^2`` (10,700 draws at p = 0.5).
    """
    from scipy.stats import norm

    v = max(q * (1 - q) for q in (p, min(p + DETECT, 1.0), max(p - DETECT, 0.0)))
    z = norm.ppf(1 - ALPHA / 2) + norm.ppf(POWER)
    return int(np.ceil((z * np.sqrt(max(v, 1e-4)) / DETECT) ** 2))


def _exact_cell(eng: HFJudgeEngine, img: Image.Image, k: int) -> dict[str, float]:
    with torch.inference_mode():
        dists, _ = eng.distributions(img)
    return dists[k].p


def _generate_counts(eng: HFJudgeEngine, img, k: int, n: int, chunk: int = 2000) -> Counter:
    """``n`` independent ``generate`` draws (rows of a batched call sample independently)."""
    spec = eng.specs[k]
    enc = eng.encode_prompt(spec.text, img)
    counts: Counter = Counter()
    torch.manual_seed(12345 + k)
    with torch.inference_mode():
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            out = eng.model.generate(
                **enc, **eng.decoding_params.generate_kwargs(), num_return_sequences=m
            )
            texts = eng.processor.tokenizer.batch_decode(
                out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True
            )
            counts.update(classify(t, spec.ordering) for t in texts)
    return counts


def test_power_of_the_sampling_check() -> None:
    """The draw count really gives >= 80% power against a 0.02 error (exact binomial power)."""
    from scipy.stats import binom, binomtest

    for p in (0.5, 0.2, 0.05):
        n = draws_for_power(p)
        # acceptance region of the two-sided exact test at ALPHA under p
        ks = np.arange(n + 1)
        lo = next(k for k in ks[: int(n * p)][::-1] if binomtest(int(k), n, p).pvalue < ALPHA)
        hi = next(k for k in ks[int(n * p) :] if binomtest(int(k), n, p).pvalue < ALPHA)
        for q in (p - DETECT, p + DETECT):
            if 0 < q < 1:
                power = binom.cdf(lo, n, q) + binom.sf(hi - 1, n, q)
                assert power >= POWER - 0.02, (p, q, n, power)


@pytest.mark.slow
def test_exact_matches_generate_frequencies(arch, benchmark) -> None:
    """(c) production settings (temperature 0.2, prune 1e-4, 64-branch cap), every
    architecture, three cells: each outcome's frequency in ``draws_for_power`` generate draws
    must pass an exact binomial test against the exact probability at ``ALPHA``."""
    from scipy.stats import binomtest

    eng = _engine(arch, benchmark, prune=1e-4, temperature=0.2)
    for img, k in ((_images()[0], 0), (_images()[1], 2), (_images()[2], 5)):
        p = _exact_cell(eng, img, k)
        n = max(draws_for_power(p[v]) for v in ("positive", "negative", "invalid"))
        counts = _generate_counts(eng, img, k, n)
        for v in ("positive", "negative", "invalid"):
            # undecided mass may have gone either way: test against the nearer end
            lo, hi = p[v], p[v] + p["undecided"]
            obs = counts[v] / n
            target = min(max(obs, lo), hi)
            pv = binomtest(counts[v], n, min(max(target, 1e-12), 1 - 1e-12)).pvalue
            assert pv >= ALPHA, (arch, k, v, counts, p, n)


# ---- rows of the three decodings --------------------------------------------------------------


def test_generate_and_sampled_rows(benchmark) -> None:
    gen = _engine("llava_next", benchmark, "generate", scenarios=[1], orderings=[1, 3])
    items = [ImageItem("img0", "face0", "/x/0.png", True)]
    df = gen.judge(items, _images()[:1])
    validate(df, JUDGMENTS, "generate rows")
    assert len(df) == 2 * 3 and set(df["seed"]) == {1, 2, 3}
    assert (df[["p_pos", "p_neg", "p_invalid"]].sum(axis=1) == 1).all()
    assert (df["p_undecided"] == 0).all() and df["response"].notna().all()
    # literal seeding is reproducible
    again = gen.judge(items, _images()[:1])
    assert df["response"].tolist() == again["response"].tolist()

    smp = _engine("llava_next", benchmark, "sampled", prune=1e-3, scenarios=[1], orderings=[1, 3])
    s1 = smp.judge(items, _images()[:1])
    validate(s1, JUDGMENTS, "sampled rows")
    assert len(s1) == 6 and set(s1["seed"]) == {1, 2, 3}
    assert s1["choice"].isin(["positive", "negative", "invalid"]).all()
    s2 = smp.judge(items, _images()[:1])
    assert s1["choice"].tolist() == s2["choice"].tolist()
