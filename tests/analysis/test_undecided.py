"""The undecided-mass table reads categorical and string columns alike."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stylisticbias.analysis.undecided import undecided_table


def _scores(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    base = rng.random(n) < 0.2
    delta = np.where(base, np.nan, rng.normal(0, 0.2, n))
    delta[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame(
        {
            "model": rng.choice(["m-b", "m-a", "m-c"], n),
            "is_base": base,
            "category": np.where(base, None, rng.choice(["Tattoos", "Fashion", "Hair"], n)),
            "delta": delta,
            "undecided": rng.random(n) * 0.01,
            "undecided_excluded": rng.random(n) < 0.02,
            "delta_low": delta - 0.01,
            "delta_high": delta + 0.02,
        }
    )


def test_categorical_and_string_columns_give_the_same_table() -> None:
    df = _scores()
    plain = undecided_table(df)
    cat = undecided_table(df.astype({"model": "category", "category": "category"}))
    pd.testing.assert_frame_equal(plain, cat, check_exact=True)
    assert list(plain["category"][:3]) == ["all"] * 3 and list(plain["model"][:3]) == [
        "m-a",
        "m-b",
        "m-c",
    ]
    one = plain[(plain["model"] == "m-a") & (plain["category"] == "Fashion")].iloc[0]
    rows = df[(df["model"] == "m-a") & (df["category"] == "Fashion")]
    assert one["n_rows"] == len(rows) and one["sbs"] == rows["delta"].mean()
    assert one["n_excluded"] == rows["undecided_excluded"].sum()


def test_no_undecided_columns_read_as_zero_mass() -> None:
    df = _scores().drop(columns=["undecided", "undecided_excluded", "delta_low", "delta_high"])
    t = undecided_table(df)
    assert (t["undecided_mean"] == 0).all() and (t["n_excluded"] == 0).all()
    assert np.allclose(t["sbs_low"], t["sbs"], equal_nan=True)
