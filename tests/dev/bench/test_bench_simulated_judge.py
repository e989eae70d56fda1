"""The simulated judge's speed benchmark runs and counts its records (the seconds are its
output, ``reports/bench/simulated_judge.json``, never a test's bound)."""

from __future__ import annotations

from stylisticbias_dev.bench import simulated_judge


def test_run_judges_every_prompt_of_every_image() -> None:
    res = simulated_judge.run(6, 1)
    assert res["records"] == 6 * 25 * 4 * 3 and len(res["seconds"]) == 1
