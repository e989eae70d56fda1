"""The answer-tables benchmark runs the real tables on planted sums and scores them."""

from __future__ import annotations

import numpy as np

from stylisticbias_dev.bench import stylisticbias_answer_tables as at


def test_measure_small_run_and_verdicts() -> None:
    st = at.Setting("null_small", 12, 0.0)
    sums = at.planted_sums(st, 3, seed=0)
    assert len(sums) == 3 and sums[0].invalid_fs.shape == (12, at.SCENARIOS)
    assert np.all(sums[0].first <= sums[0].valid)
    res = at.measure(st, reps=4, n_boot=49, seed=0)
    for t in ("position_bias", "letter_bias"):
        assert res[t]["alpha_0.05"]["n"] == 4 and 0.0 <= res[t]["coverage"]["rate"] <= 1.0
    assert res["invalid_rates"]["coverage_per_scenario"]["n"] == 4 * at.SCENARIOS
    ok = at.verdicts({"null_small": res})
    assert set(ok) >= {"null_small.position_bias", "null_small.invalid_rates.coverage_per_scenario"}
    assert not any(".invalid_rates.true_rate" in k for k in ok)  # only coverages are verdicts


def test_rare_invalid_settings_plant_rare_rates_and_empty_cells() -> None:
    rare = [st for st in at.SETTINGS if st.inv_base < at.INVALID_BASE]
    assert {st.faces for st in rare} == {15, 40}
    sums = at.planted_sums(rare[0], 2, seed=1)
    assert 0.1 < float((sums[0].invalid_fs == 0).mean()) < 0.5  # faces without an invalid answer
    truth = at.population_truth(rare[0], n=200_000)["invalid"]
    assert 0.005 < truth[0] < 0.02 and truth[1:].min() > 0.002


def test_population_truth_is_one_half_without_tendency() -> None:
    truth = at.population_truth(at.Setting("s", 40, 0.0, skewed=True), n=400_000)
    assert abs(truth["position"] - 0.5) < 5e-4 and abs(truth["letter"] - 0.5) < 5e-4
    assert 0.01 < truth["invalid"][0] < 0.05
