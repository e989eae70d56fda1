"""Identity sampling reproduces the paper's marginals exactly and is deterministic."""

from __future__ import annotations

import pandas as pd
import pytest

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.sampling import largest_remainder, sample_identities

PAPER = {
    "gender": {"male": 274, "female": 226},
    "age": {"young adult": 260, "middle-aged adult": 124, "elderly": 116},
    "body_type": {"thin": 154, "normal": 186, "obese": 160},
    "ethnicity": {
        "Asian": 110,
        "African": 109,
        "European": 101,
        "Middle Eastern": 95,
        "Latino": 85,
    },
}


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_paper_marginals_exact_at_500(benchmark: Benchmark, seed: int) -> None:
    df = sample_identities(benchmark, 500, seed=seed)
    assert len(df) == 500 and df["face_id"].is_unique
    for axis, counts in PAPER.items():
        assert df[axis].value_counts().to_dict() == counts, axis


def test_deterministic_and_seed_dependent(benchmark: Benchmark) -> None:
    a = sample_identities(benchmark, 50, seed=3)
    pd.testing.assert_frame_equal(a, sample_identities(benchmark, 50, seed=3))
    assert not a.equals(sample_identities(benchmark, 50, seed=4))


def test_scaled_marginals_sum_to_n(benchmark: Benchmark) -> None:
    df = sample_identities(benchmark, 24, seed=0)
    assert df["gender"].value_counts().to_dict() == {"male": 13, "female": 11}
    for axis in PAPER:
        assert df[axis].value_counts().sum() == 24


def test_largest_remainder_against_hand_computation() -> None:
    assert largest_remainder({"a": 1, "b": 1, "c": 1}, 4) == {"a": 2, "b": 1, "c": 1}
    assert largest_remainder({"x": 274, "y": 226}, 10) == {"x": 5, "y": 5}
    assert sum(largest_remainder({"x": 0.3, "y": 0.7}, 7).values()) == 7


def test_uniform_sampler_covers_grid(benchmark: Benchmark) -> None:
    df = sample_identities(benchmark, 180, seed=0, sampler="uniform")
    cells = df.groupby(["age", "gender", "ethnicity", "body_type"]).size()
    assert len(cells) == 90 and set(cells) == {2}


def test_bad_sampler_and_n(benchmark: Benchmark) -> None:
    with pytest.raises(StylisticBiasError, match="valid: paper_marginals, uniform"):
        sample_identities(benchmark, 10, sampler="stratified")
    with pytest.raises(StylisticBiasError, match=r"faces\.n"):
        sample_identities(benchmark, -1)


def test_paper_nested_prefixes_extend_each_other(benchmark: Benchmark) -> None:
    """paper_nested: N = 20 is the first 20 rows of N = 60, which is the first 60 of the paper's
    500 (same ids, demographics and render seeds); paper_marginals at a small N is not nested."""
    full = sample_identities(benchmark, 500, seed=7)
    small = sample_identities(benchmark, 20, seed=7, sampler="paper_nested")
    large = sample_identities(benchmark, 60, seed=7, sampler="paper_nested")
    pd.testing.assert_frame_equal(large, full.iloc[:60].reset_index(drop=True))
    pd.testing.assert_frame_equal(small, large.iloc[:20])
    at_500 = sample_identities(benchmark, 500, seed=7, sampler="paper_nested")
    for axis, counts in PAPER.items():
        assert at_500[axis].value_counts().to_dict() == counts, axis
    marg20 = sample_identities(benchmark, 20, seed=7)
    marg60 = sample_identities(benchmark, 60, seed=7)
    assert not marg20.equals(marg60.iloc[:20])  # why the sweep needs paper_nested


def test_paper_nested_refuses_more_than_the_population(benchmark: Benchmark) -> None:
    with pytest.raises(StylisticBiasError, match=r"faces\.n=501.*paper_nested.*500"):
        sample_identities(benchmark, 501, sampler="paper_nested")
