"""outcomes: the one frozen type every hf decoder returns, and the seeded draws (torch-free)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from stylisticbias.judge.protocol.outcomes import (
    COLUMNS,
    Outcome,
    PromptDistribution,
    draw_outcomes,
    exact_outcomes,
    stable_seed,
)
from stylisticbias.schemas import JUDGMENTS

D = PromptDistribution(
    {"positive": 0.5, "negative": 0.3, "invalid": 0.15, "undecided": 0.05},
    {"positive": "(a)", "negative": "(b)", "invalid": "neither"},
)


def test_outcome_is_frozen_and_fills_the_judgment_columns() -> None:
    o = Outcome.sampled_text(2, "(b)", "negative")
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.seed = 3  # type: ignore[misc]
    assert (o.p_pos, o.p_neg, o.p_invalid, o.p_undecided) == (0.0, 1.0, 0.0, 0.0)
    assert set(o.columns()) <= set(COLUMNS)
    assert list(COLUMNS) == list(JUDGMENTS.columns)


def test_exact_is_one_seed0_row_with_the_exact_masses() -> None:
    [o] = exact_outcomes(D, "exact", [1, 2, 3], "img", 4, 2)
    assert (o.seed, o.response, o.choice) == (0, None, None)
    assert (o.p_pos, o.p_neg, o.p_invalid, o.p_undecided) == (0.5, 0.3, 0.15, 0.05)


def test_sampled_draws_one_choice_per_seed_with_its_representative_text() -> None:
    got = exact_outcomes(D, "sampled", [1, 2, 3], "img", 4, 2)
    assert [o.seed for o in got] == [1, 2, 3]
    assert [o.choice for o in got] == draw_outcomes(D.p, [1, 2, 3], "img", 4, 2)
    for o in got:
        assert o.response == D.best[o.choice] and o.p_pos == 0.5


def test_draws_follow_the_masses_undecided_counting_as_invalid() -> None:
    """Independent check: the empirical shares over 20,000 cells are within 0.01 of p.

    Binomial sd at p=0.5, n=20,000 is 0.0035, so a shift of 0.01 (the size that matters) is ~3 sd.
    """
    seeds = list(range(1, 5))
    draws = [c for i in range(5000) for c in draw_outcomes(D.p, seeds, f"i{i}", 1, 1)]
    share = {k: np.mean([d == k for d in draws]) for k in ("positive", "negative", "invalid")}
    assert share["positive"] == pytest.approx(0.5, abs=0.01)
    assert share["negative"] == pytest.approx(0.3, abs=0.01)
    assert share["invalid"] == pytest.approx(0.2, abs=0.01)


def test_stable_seed_is_sha256_of_the_joined_parts() -> None:
    import hashlib

    h = hashlib.sha256(b"1|img|4|2").digest()
    assert stable_seed(1, "img", 4, 2) == int.from_bytes(h[:8], "big") >> 1


def test_importing_outcomes_does_not_import_torch() -> None:
    code = "import sys, stylisticbias.judge.protocol.outcomes; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
