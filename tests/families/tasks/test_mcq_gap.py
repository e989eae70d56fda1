"""REFLECT's MCQ gap is one function (``stats.relative_mean_gap``): the task tables estimate
it and the calibration truth applies it to the planted distributions, so changing the
statistic is one edit inside the tasks family."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.families.tasks.analysis import calibration as tc
from stylisticbias.families.tasks.analysis import stats as ts
from stylisticbias.families.tasks.analysis import tables as tt
from stylisticbias.judge.engines.simulated.tasks import choice_k_probs


def test_the_gap_is_the_relative_difference_of_encoded_means() -> None:
    values = [10.0, 30.0, 50.0]
    assert ts.relative_mean_gap([0.2, 0.3, 0.5], [0.5, 0.3, 0.2], values) == pytest.approx(
        (36.0 - 24.0) / 24.0
    )
    assert ts.relative_mean_gap([0.2, 0.3, 0.5], [0.2, 0.3, 0.5], values) == 0.0


def test_the_calibration_truth_is_the_gap_of_the_planted_distributions() -> None:
    bench = load_benchmark("reflect")
    values = [float(o.value) for o in bench.task_scenario(tc.MCQ_SALARY).options]  # type: ignore[arg-type]
    plant = tc.reflect_plants(False)["choice_k"]
    ref = choice_k_probs(plant.base, plant.effect(tc.REF))
    truth = tc.reflect_truth(bench)["reflect_mcq_gaps"]
    for g in tc.GROUPS:
        mu = float(np.dot(choice_k_probs(plant.base, plant.effect(g)), values))
        mu_ref = float(np.dot(ref, values))
        assert truth[g] == (mu - mu_ref) / mu_ref  # the closed form, bit for bit
    assert truth[tc.REF] == 0.0 and any(abs(v) > 0.01 for v in truth.values())


def test_tables_and_truth_call_the_same_function(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ts, "relative_mean_gap", lambda dist, ref, values: 42.0)
    truth = tc.reflect_truth(load_benchmark("reflect"))["reflect_mcq_gaps"]
    assert set(truth.values()) == {42.0}
    answers = pd.DataFrame(
        {
            "unit": [f"u{i % 4}" for i in range(16)],
            "group": ["a"] * 8 + ["b"] * 8,
            "choice": list("xyxyxxyy" * 2),
        }
    )
    gaps = tt.mcq_tables(answers, "m", 11, ("x", "y"), [1.0, 2.0], "a", n_boot=5)
    assert set(gaps["reflect_mcq_gaps"]["relative_mean_gap"]) == {42.0}
