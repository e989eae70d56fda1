"""Position / letter bias and invalid rates from crafted answer records."""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.testing import assert_allclose

from stylisticbias.analysis.diagnostics import bias_tables, response_sums


def _records(benchmark, chooser, n_faces=8, exact=False) -> pd.DataFrame:
    rows = []
    for f in range(n_faces):
        for s in benchmark.scenarios[:5]:
            for o in benchmark.orderings:
                for k in [0] if exact else [1, 2, 3]:
                    choice = chooser(f, s.id, o, k)
                    pp = 1.0 if choice == "positive" else 0.0
                    pn = 1.0 if choice == "negative" else 0.0
                    rows.append(
                        (
                            f"f{f}",
                            s.id,
                            o.id,
                            k,
                            None if exact else choice,
                            pp,
                            pn,
                            1.0 - pp - pn,
                            0.0,
                        )
                    )
    return pd.DataFrame(
        rows,
        columns=[
            "face_id",
            "scenario_id",
            "ordering",
            "seed",
            "choice",
            "p_pos",
            "p_neg",
            "p_invalid",
            "p_undecided",
        ],
    )


def test_always_first_option(benchmark) -> None:
    def first(f, s, o, k):
        return o.slots[0][1]

    pos, let, inv = bias_tables(
        [response_sums(_records(benchmark, first), benchmark, "m")], n_resamples=50, ci=0.95, seed=0
    )
    assert_allclose(pos.share.iloc[0], 1.0)
    assert_allclose(let.share.iloc[0], 0.5)  # the orderings balance the letters
    assert pos.pval.iloc[0] < 0.05 and np.isnan(let.pval.iloc[0])
    assert_allclose(inv.invalid_rate, 0.0)


def test_letter_a_and_invalid_rates(benchmark) -> None:
    def a_or_invalid(f, s, o, k):
        if s == 1 and k == 1:
            return "invalid"
        return "positive" if o.positive_letter == "a" else "negative"

    j = _records(benchmark, a_or_invalid)
    pos, let, inv = bias_tables([response_sums(j, benchmark, "m")], n_resamples=50, ci=0.95, seed=0)
    assert_allclose(let.share.iloc[0], 1.0)
    assert_allclose(pos.share.iloc[0], 0.5)
    r = inv.set_index("scenario_id").invalid_rate
    assert_allclose(r.loc[1], 1 / 3)  # one of three seeds
    assert_allclose(r.loc[2], 0.0)
    ref = (j.choice == "invalid").mean()
    assert_allclose(r.loc[0], ref)


def test_exact_rows_use_probabilities(benchmark) -> None:
    def first(f, s, o, k):
        return o.slots[0][1]

    j = _records(benchmark, first, exact=True)
    pos, _, _ = bias_tables([response_sums(j, benchmark, "m")], n_resamples=0, ci=0.95, seed=0)
    assert_allclose(pos.share.iloc[0], 1.0)
    assert np.isnan(pos.ci_low.iloc[0])


def test_counted_sums_equal_the_row_wise_sums(benchmark) -> None:
    """Drawn answers with a categorical ``choice`` are counted in one pass; every sum equals the
    row-wise weighted sums exactly (an unknown answer weighs 0, as in the row-wise path)."""
    rng = np.random.default_rng(3)
    answers = np.array(["positive", "negative", "invalid", "chatter"])

    def chooser(f, s, o, k):
        return answers[rng.choice(4, p=[0.5, 0.35, 0.1, 0.05])]

    rows = _records(benchmark, chooser, n_faces=7)
    counted = response_sums(rows.astype({"choice": "category"}), benchmark, "m")
    row_wise = response_sums(rows.astype({"choice": object}), benchmark, "m")
    for name in ("first", "letter_a", "valid", "invalid_fs", "total_fs", "scenarios"):
        assert np.array_equal(getattr(counted, name), getattr(row_wise, name)), name
    assert list(counted.faces) == list(row_wise.faces)
    assert counted.n_responses == row_wise.n_responses == len(rows)
