"""Exact distributions from log-probabilities, checked against brute-force enumeration.

A fake server answers next-token log-probabilities from a known text model; the expansion must
equal the enumeration of every answer up to ``max_new_tokens`` parsed by the shared parser, at
the tempered distribution (exact to float precision when the server shows the whole
vocabulary). With only the top-k shown, every verdict's mass may only be *under*-stated (the
tail bound goes to undecided), never over-stated.
"""

from __future__ import annotations

import asyncio
import itertools
import math

import numpy as np
import pytest

from stylisticbias.judge.engines.openai.exact import ExactSettings, expand_texts, temper
from stylisticbias.judge.protocol.parsing import parse_response

VOCAB = ["(", "a", "b", ")", " ", "</s>"]
EOS = "</s>"


def raw_logprobs(prompt: int, text: str) -> list[float]:
    """A fixed, prompt-dependent next-token distribution over VOCAB (log-softmax)."""
    last = text[-1:] or "^"
    rs = np.random.RandomState(1000 * prompt + ord(last))
    logits = rs.normal(0.0, 1.5, len(VOCAB))
    logits[VOCAB.index(EOS)] += 1.0 if text.endswith(")") else -0.5
    return list(logits - np.logaddexp.reduce(logits))


def brute_force(prompt: int, t: float, max_new: int) -> dict[str, float]:
    out = {"a": 0.0, "b": 0.0, "invalid": 0.0}

    def q(text: str) -> list[float]:
        lp = np.array(raw_logprobs(prompt, text)) / t
        return list(np.exp(lp - np.logaddexp.reduce(lp)))

    def walk(text: str, p: float, n: int) -> None:
        for tok, qt in zip(VOCAB, q(text)):
            if tok == EOS or n + 1 >= max_new:
                final = text if tok == EOS else text + tok
                out[parse_response(final) or "invalid"] += p * qt
            else:
                walk(text + tok, p * qt, n + 1)

    walk("", 1.0, 0)
    return out


def run(settings: ExactSettings, k: int, n_prompts: int = 3):
    calls = []

    async def fetch(prompt: int, prefix: str) -> dict:
        calls.append((prompt, prefix))
        lps = raw_logprobs(prompt, prefix)
        top = sorted(zip(VOCAB, lps), key=lambda x: -x[1])[:k]
        return {"top_logprobs": [[t, lp] for t, lp in top], "refusal": None}

    return asyncio.run(expand_texts(n_prompts, fetch, settings, asyncio.gather)), calls


@pytest.mark.parametrize("t", [0.2, 0.7, 1.0, 1.5])
def test_full_vocabulary_equals_enumeration(t: float) -> None:
    s = ExactSettings(
        temperature=t,
        max_new_tokens=4,
        prune_threshold=0.0,
        max_branches_per_suffix=10**6,
        eos_tokens=(EOS,),
        vocab_size=len(VOCAB),
    )
    dists, calls = run(s, k=len(VOCAB))
    for prompt, d in enumerate(dists):
        want = brute_force(prompt, t, 4)
        assert d.undecided == pytest.approx(0.0, abs=1e-9)  # float residue of 1 - sum
        for v in want:
            assert d.mass[v] == pytest.approx(want[v], abs=1e-9)
    assert len(calls) == len(set(calls))  # every node asked once


def test_wrong_temperature_is_detected() -> None:
    """Negative control: the comparison above sees a 0.2 vs 0.25 temperature mix-up."""
    s = ExactSettings(
        temperature=0.25,
        max_new_tokens=4,
        prune_threshold=0.0,
        max_branches_per_suffix=10**6,
        eos_tokens=(EOS,),
    )
    dists, _ = run(s, k=len(VOCAB))
    diffs = [
        abs(d.mass[v] - brute_force(p, 0.2, 4)[v])
        for p, d in enumerate(dists)
        for v in ("a", "b", "invalid")
    ]
    assert max(diffs) > 0.01


@pytest.mark.parametrize("t", [0.2, 0.7, 2.0])
def test_top_k_never_overstates(t: float) -> None:
    s = ExactSettings(
        temperature=t,
        max_new_tokens=4,
        prune_threshold=0.0,
        max_branches_per_suffix=10**6,
        eos_tokens=(EOS,),
        vocab_size=len(VOCAB),
    )
    dists, _ = run(s, k=3)
    for prompt, d in enumerate(dists):
        want = brute_force(prompt, t, 4)
        mass, und = d.normalised()
        assert sum(mass.values()) + und == pytest.approx(1.0)
        assert und > 0
        for v in want:
            assert mass[v] <= want[v] + 1e-12


def test_temper_processed_mode_and_bound() -> None:
    top = [["x", math.log(0.5)], ["y", math.log(0.3)]]
    probs, tail = temper(
        top, ExactSettings(temperature=0.2, max_new_tokens=4, logprobs_mode="processed")
    )
    assert probs == [("x", pytest.approx(0.5)), ("y", pytest.approx(0.3))]
    assert tail == pytest.approx(0.2)
    probs, tail = temper(top, ExactSettings(temperature=0.5, max_new_tokens=4))
    # the true tempered tail (all 0.2 mass on one token of p=0.2, the worst case) is below it
    z_true = 0.5**2 + 0.3**2 + 0.2**2
    assert probs[0][1] <= 0.5**2 / z_true + 1e-12 and tail >= 0.2**2 / z_true * 0.999


def test_prune_and_cap_move_mass_to_undecided() -> None:
    s = ExactSettings(
        temperature=1.0,
        max_new_tokens=5,
        prune_threshold=0.05,
        max_branches_per_suffix=2,
        eos_tokens=(EOS,),
    )
    dists, _ = run(s, k=len(VOCAB))
    for d in dists:
        total = sum(d.mass.values()) + d.undecided
        assert total == pytest.approx(1.0) and d.undecided > 0.05


def test_refusal_is_invalid_with_reason() -> None:
    async def fetch(prompt: int, prefix: str) -> dict:
        return {"top_logprobs": None, "refusal": "finish_reason=content_filter"}

    s = ExactSettings(temperature=0.2, max_new_tokens=4)
    (d,) = asyncio.run(expand_texts(1, fetch, s, asyncio.gather))
    assert d.mass["invalid"] == 1.0 and d.refusals == ["finish_reason=content_filter"]


def test_enumeration_itself_sums_to_one() -> None:
    for prompt, t in itertools.product(range(2), (0.2, 1.0)):
        assert sum(brute_force(prompt, t, 4).values()) == pytest.approx(1.0)
