"""The simulated judge's planted effects for task types recovered from its parsed answers.

choice_k: an ordered-logit regression (statsmodels ``OrderedModel``) on the simulated answers
recovers the planted ordinal shift; pairwise: the win probability in each order and the
position bias the swap exposes; numeric: the log-normal group means; every task: the planted
invalid rate, invalid answers carrying the parser's refusal reason. Draws are counter-based:
a unit's answer does not depend on which other units share its call.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.miscmodels.ordinal_model import OrderedModel

from stylisticbias.benchmark import load_benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.simulated.tasks import (
    TaskPlant,
    choice_k_probs,
    expected_mean,
    expected_numeric_mean,
    pairwise_first_prob,
    simulate_answers,
    simulate_texts,
)
from stylisticbias.judge.protocol.tasks.registry import task_of

TASKS = Path(__file__).resolve().parents[3] / "data" / "protocols" / "tasks.yaml"
N = 4000


@pytest.fixture(scope="module")
def bench():
    return load_benchmark(TASKS)


def _run(bench, task_id: int, plant: TaskPlant, groups, variant: int = 0, seed: int = 3):
    sc = bench.task_scenario(task_id)
    prompt = task_of(sc).prompts(sc, bench)[variant]
    ids = [f"u{i}" for i in range(len(groups))]
    return sc, prompt, simulate_answers(bench, sc, prompt, plant, ids, groups, seed)


def test_choice_k_probs_proportional_odds() -> None:
    base = (0.1, 0.2, 0.3, 0.2, 0.1, 0.1)
    assert choice_k_probs(base, 0.0) == pytest.approx(np.array(base))
    up = choice_k_probs(base, 1.0)
    assert up.sum() == pytest.approx(1.0) and up[-1] > base[-1] and up[0] < base[0]
    with pytest.raises(StylisticBiasError, match="positive"):
        choice_k_probs((1.0, 0.0), 0.0)


def test_ordered_logit_recovers_the_planted_shift(bench) -> None:
    plant = TaskPlant(shift={"g1": 0.8}, base=(0.1, 0.2, 0.3, 0.2, 0.1, 0.1), invalid_rate=0.05)
    groups = [("g0",)] * N + [("g1",)] * N
    sc, _, out = _run(bench, 101, plant, groups)
    valid = [(g[0], a) for g, (_, a) in zip(groups, out) if a.valid]
    assert 1 - len(valid) / len(out) == pytest.approx(0.05, abs=0.012)
    assert all(
        a.reason.startswith("refusal") or a.reason.startswith("hedged")
        for _, a in out
        if not a.valid
    )
    df = pd.DataFrame(
        {
            "y": [sc.labels.index(a.choice) for _, a in valid],
            "g1": [float(g == "g1") for g, _ in valid],
        }
    )
    y = pd.Series(pd.Categorical(df["y"], categories=range(6), ordered=True))
    fit = OrderedModel(y, df[["g1"]], distr="logit").fit(method="bfgs", disp=False)
    est, se = fit.params["g1"], fit.bse["g1"]
    assert abs(est - 0.8) < 3.5 * se, (est, se)
    # mean option value vs the closed-form ground truth
    vals = [o.value for o in sc.options]
    for g in ("g0", "g1"):
        got = np.mean([a.value for gg, a in valid if gg == g])
        sd = np.std([a.value for gg, a in valid if gg == g])
        assert abs(got - expected_mean(plant, g, vals)) < 4 * sd / np.sqrt(N)


def test_pairwise_win_probability_and_position_bias(bench) -> None:
    plant = TaskPlant(shift={"x": 0.6}, position_bias=0.4)
    groups = [("x", "y")] * N
    shares = {}
    for v in (0, 1):
        _, _, out = _run(bench, 102, plant, groups, variant=v)
        share = np.mean([a.choice == "first" for _, a in out])
        want = pairwise_first_prob(plant, "x", "y", v)
        assert abs(share - want) < 4 * np.sqrt(want * (1 - want) / N)
        shares[v] = share
    # the swap exposes the bias toward slot 1: P(first | first in slot 1) > P(first | slot 2)
    assert shares[0] - shares[1] > 0.1


def test_numeric_group_means(bench) -> None:
    plant = TaskPlant(shift={"g1": -0.1}, base_mean=80_000, noise_sd=0.25, invalid_rate=0.02)
    groups = [("g0",)] * N + [("g1",)] * N
    _, _, out = _run(bench, 104, plant, groups)
    for g in ("g0", "g1"):
        vals = np.array([a.value for gg, (_, a) in zip(groups, out) if gg[0] == g and a.valid])
        want = expected_numeric_mean(plant, g)
        assert abs(vals.mean() - want) < 4 * vals.std() / np.sqrt(len(vals))
    texts = [t for t, _ in out[:5]]
    assert all(t.startswith("$") or t.startswith("I'm sorry") for t in texts)


def test_draws_do_not_depend_on_batching(bench) -> None:
    plant = TaskPlant(shift={"g1": 0.5}, invalid_rate=0.1)
    sc = bench.task_scenario(105)  # text_only answered as choice_k
    prompt = task_of(sc).prompts(sc, bench)[0]
    ids = [f"u{i}" for i in range(50)]
    groups = [("g1",) if i % 2 else ("g0",) for i in range(50)]
    whole = simulate_texts(bench, sc, prompt, plant, ids, groups, 9)
    parts = simulate_texts(bench, sc, prompt, plant, ids[:20], groups[:20], 9) + simulate_texts(
        bench, sc, prompt, plant, ids[20:], groups[20:], 9
    )
    assert whole == parts
    assert simulate_texts(bench, sc, prompt, plant, ids, groups, 10) != whole


def test_engine_task_answers_use_the_model_seed(bench) -> None:
    from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine

    model = {"name": "sim", "seed": 5, "effect_scale": 1.0, "noise_sd": 0.05, "invalid_rate": 0.02}
    eng = SimulatedJudgeEngine(
        model,
        {"name": "simulated", "planted": {"position_bias": 0.0}},
        {"orderings": "all", "seeds": [1]},
        bench,
    )
    plant = TaskPlant(shift={"x": 0.6}, position_bias=0.4)
    got = eng.task_answers(102, 1, plant, ["p1", "p2"], [("x", "y"), ("y", "x")])
    sc = bench.task_scenario(102)
    prompt = task_of(sc).prompts(sc, bench)[1]
    assert got == simulate_answers(
        bench, sc, prompt, plant, ["p1", "p2"], [("x", "y"), ("y", "x")], 5
    )
