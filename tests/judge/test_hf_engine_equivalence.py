"""Proof tests of the hf engine on tiny random-weight checkpoints (CPU, float32).

(a) prefix KV reuse == a full forward pass; (b) batch composition and image order change
nothing; (c) the exact outcome distribution matches ``generate()``'s empirical frequencies
(chi-square goodness of fit), and the same test rejects wrong distributions (negative controls).
The tiny models answer at temperature 1.0 here (at 0.2 they almost always say the same thing,
which would make the goodness-of-fit test vacuous).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from scipy.stats import chisquare

from stylisticbias.judge import tiny
from stylisticbias.judge.base import ImageItem
from stylisticbias.judge.hf_engine import HFJudgeEngine
from stylisticbias.judge.hf_exact import (
    ExpandStats,
    expand,
    prefill,
    split_prompts,
    suffix_logits,
)
from stylisticbias.judge.parsing import classify
from stylisticbias.judge.prompts import encode, render
from stylisticbias.judge.shared_prefix import (
    SharedPrefixCache,
    SharedPrefixUnsupported,
    unsupported_reason,
)
from stylisticbias.schemas import JUDGMENTS, validate

ROOT = Path(__file__).resolve().parents[2]
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
    arch: str, benchmark, decoding: str = "exact", prune: float = 1e-6, **judge
) -> HFJudgeEngine:
    path = tiny.ensure_built(arch, TINY_DIR / arch)
    model_cfg = {"name": f"tiny-{arch}", "hub_id": str(path), "dtype": "float32"}
    judge_cfg = {
        "orderings": [1, 2, 3, 4],
        "seeds": [1, 2, 3],
        "temperature": TEST_T,
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
    batch = expand(eng.model, tok, cache, prompts.prefix_ids,
                   [prompts.suffixes[k] for k in group], params, stats=stats)  # fmt: skip
    assert stats.capped_mass > 0  # the cap binds in this batch
    for j, k in list(enumerate(group))[:2]:
        alone = expand(eng.model, tok, cache, prompts.prefix_ids, [prompts.suffixes[k]],
                       params)[0]  # fmt: skip
        for v in ("a", "b", "invalid"):
            assert alone.mass[v] == pytest.approx(batch[j].mass[v], abs=1e-6)
        assert alone.undecided == pytest.approx(batch[j].undecided, abs=1e-6)


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


# ---- (c) exact vs generate ------------------------------------------------------------------


def _merge_small(obs: np.ndarray, exp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pool categories with expected count < 5 into one (chi-square validity)."""
    small = exp < 5
    if small.sum() <= 1 and not (small.any() and exp[small].sum() < 5):
        return obs, exp
    keep = ~small
    o = np.append(obs[keep], obs[small].sum())
    e = np.append(exp[keep], exp[small].sum())
    if e[-1] < 5 and len(e) > 2:  # still tiny: fold into the smallest kept category
        j = int(np.argmin(e[:-1]))
        o[j] += o[-1]
        e[j] += e[-1]
        o, e = o[:-1], e[:-1]
    return o, e


def _gof(counts: Counter, p: dict[str, float], n: int) -> float:
    cats = ["positive", "negative", "invalid"]
    obs = np.array([counts[c] for c in cats], dtype=float)
    w = np.array([p[c] for c in cats], dtype=float)
    exp = w / w.sum() * n
    obs, exp = _merge_small(obs, exp)
    return float(chisquare(obs, exp).pvalue)


def _exact_cell(eng: HFJudgeEngine, img: Image.Image, k: int) -> dict[str, float]:
    with torch.inference_mode():
        dists, _ = eng.distributions(img)
    return dists[k]["p"]


def _generate_counts(eng: HFJudgeEngine, img, k: int, n: int, batched: bool) -> Counter:
    spec = eng.specs[k]
    enc = eng.encode_prompt(spec.text, img)
    counts: Counter = Counter()
    with torch.inference_mode():
        if batched:  # n independent draws from one call (rows sample independently)
            torch.manual_seed(12345)
            out = eng.model.generate(
                **enc, **eng.decoding_params.generate_kwargs(), num_return_sequences=n
            )
            texts = eng.processor.tokenizer.batch_decode(
                out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True
            )
        else:  # the literal per-call procedure, seeds 1..n
            texts = [eng.generate_one(enc, s) for s in range(1, n + 1)]
    for t in texts:
        counts[classify(t, spec.ordering)] += 1
    return counts


def _check_cell(eng: HFJudgeEngine, img, k: int, n: int, batched: bool) -> None:
    p = _exact_cell(eng, img, k)
    assert p["undecided"] < 0.01
    counts = _generate_counts(eng, img, k, n, batched)
    assert _gof(counts, p, n) > 1e-3, (counts, p)
    # negative control 1: outcome labels swapped (only where it has power: p_pos != p_neg)
    if abs(p["positive"] - p["negative"]) > 0.15:
        swapped = {**p, "positive": p["negative"], "negative": p["positive"]}
        assert _gof(counts, swapped, n) < 1e-3
    # negative control 2: the exact distribution at the wrong temperature (where it differs)
    cold = HFJudgeEngine(eng.model_cfg, eng.engine_cfg, {**eng.judge_cfg, "temperature": 0.25},
                         eng.benchmark)  # fmt: skip
    cold.model, cold.processor, cold._rendered = eng.model, eng.processor, eng._rendered
    q = _exact_cell(cold, img, k)
    if sum(abs(q[c] - p[c]) for c in ("positive", "negative", "invalid")) / 2 > 0.1:
        assert _gof(counts, q, n) < 1e-3
    # negative control 3 (always has power): 0.15 of mass moved between the two poles
    big, small = sorted(("positive", "negative"), key=lambda c: -p[c])
    shifted = {**p, big: p[big] - 0.15, small: p[small] + 0.15}
    assert _gof(counts, shifted, n) < 1e-3


def test_exact_matches_generate_frequencies_small(benchmark) -> None:
    """(c) default-suite version: one architecture, one cell, 200 draws."""
    eng = cached_engine("llava_next", benchmark)
    p = _exact_cell(eng, _images()[0], 0)
    assert abs(p["positive"] - p["negative"]) > 0.15  # so the swapped-label control has power
    _check_cell(eng, _images()[0], 0, 200, batched=True)


@pytest.mark.slow
def test_exact_matches_generate_frequencies(arch, benchmark) -> None:
    """(c) every architecture, several cells, 600 literal per-seed generate() calls each."""
    eng = cached_engine(arch, benchmark)
    for img, k in ((_images()[0], 0), (_images()[1], 2), (_images()[2], 5)):
        _check_cell(eng, img, k, 600, batched=False)


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
