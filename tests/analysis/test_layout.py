"""Paper-layout cell text: the paper's marks, and untested cells never read as significant."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from stylisticbias.analysis.layout import UNTESTED, _wide, fmt


@pytest.mark.parametrize(
    ("mark", "want"),
    [
        ("p<0.001", "**+0.056**"),
        ("p<0.05", "+0.056"),
        ("ns", "<u>+0.056</u>"),
        ("", "+0.056" + UNTESTED),
        (math.nan, "+0.056" + UNTESTED),
        (None, "+0.056"),
    ],
)
def test_fmt_marks(mark, want) -> None:
    assert fmt(0.0564, 3, True, mark) == want


def test_fmt_nan_value_is_a_dash_whatever_the_mark() -> None:
    assert fmt(float("nan"), mark="p<0.001") == "-"
    assert fmt(None, mark="") == "-"  # type: ignore[arg-type]


def test_wide_average_row_is_marked_untested_and_plain_table_is_not() -> None:
    df = pd.DataFrame(
        {
            "model": ["m1", "m1", "Average", "Average"],
            "dimension": ["age", "gender", "age", "gender"],
            "vs": [0.1, 0.2, 0.15, 0.25],
            "significance": ["p<0.05", "ns", "", ""],
        }
    )
    w = _wide(df, ["model"], "dimension", "vs", ["age", "gender"], {}, sign=False)
    avg = w[w.model == "Average"].iloc[0]
    assert avg["age"] == "0.150" + UNTESTED and avg["gender"] == "0.250" + UNTESTED
    m1 = w[w.model == "m1"].iloc[0]
    assert m1["age"] == "0.100" and m1["gender"] == "<u>0.200</u>"
    plain = _wide(df.drop(columns="significance"), ["model"], "dimension", "vs", ["age"], {})
    assert not plain["age"].str.contains(UNTESTED).any()
