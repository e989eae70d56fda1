"""The generator audit: colour buckets, a planted group difference found, a null one not."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stylisticbias.soda.generator_audit import audit_table, colour_bucket, dominant_colour


def test_colour_buckets() -> None:
    px = np.array(
        [
            [250, 250, 250],
            [10, 10, 10],
            [128, 128, 128],
            [200, 30, 30],
            [40, 70, 200],
            [40, 200, 40],
            [230, 200, 40],
            [160, 90, 40],
        ]
    )
    assert list(colour_bucket(px)) == [
        "white",
        "black",
        "grey",
        "red",
        "blue",
        "green",
        "yellow",
        "orange_brown",
    ]
    img = np.zeros((4, 4, 3), np.uint8)
    img[:3] = (200, 30, 30)
    region = np.ones((4, 4), bool)
    assert dominant_colour(img, region) == "red"
    assert dominant_colour(img, np.zeros((4, 4), bool)) is None


def _labels(rng: np.random.Generator, planted: bool) -> pd.DataFrame:
    rows = []
    for i in range(60):
        age = ("young adult", "middle-aged adult", "elderly")[i % 3]
        p_red = 0.9 if planted and age == "elderly" else 0.2
        rows.append(
            {
                "image_id": f"f{i}",
                "attribute": "Fashion style",
                "value": "Formal",
                "framing": "full_body",
                "age": age,
                "gender": ("male", "female")[i % 2],
                "ethnicity": "Asian",
                "body_type": "normal",
                "colour": "red" if rng.random() < p_red else "blue",
                "changed_share": float(rng.uniform(0.1, 0.3)),
            }
        )
    return pd.DataFrame(rows)


def test_planted_group_difference_found_null_not() -> None:
    rng = np.random.default_rng(0)
    found = audit_table(_labels(rng, True), n_perm=2000, seed=1, alpha=0.05)
    top = found.iloc[0]
    assert (top["dimension"], top["group"], top["group_colour"]) == ("age", "elderly", "red")
    assert top["significant"] and top["rest_colour"] == "blue"
    null = audit_table(_labels(rng, False), n_perm=2000, seed=1, alpha=0.05)
    assert not null["significant"].any()
    assert set(null["dimension"]) == {"age", "gender"}  # one-group dimensions are not tested
    assert (null["dimension"] == "gender").sum() == 1  # two groups: one test, not two


def test_too_few_edits_give_an_empty_table_with_columns() -> None:
    rng = np.random.default_rng(1)
    out = audit_table(_labels(rng, True).head(6), n_perm=100, seed=1, alpha=0.05)
    assert out.empty and "significant" in out.columns


def test_no_edits_give_an_empty_audit():
    """A protocol of tasks alone has no variations: the audit is empty, with its columns."""
    from stylisticbias.soda.generator_audit import AUDIT_COLUMNS

    out = audit_table(pd.DataFrame(), n_perm=10, seed=0, alpha=0.05)
    assert out.empty and list(out.columns) == list(AUDIT_COLUMNS)


def _reference_dominant(img: np.ndarray, region: np.ndarray, max_pixels: int = 4000) -> str | None:
    """The dominant bucket by strings: ``np.unique`` of the names (ties: alphabetical first)."""
    px = img[region]
    if not len(px):
        return None
    names = colour_bucket(px[:: max(1, len(px) // max_pixels)]).astype(str)
    values, counts = np.unique(names, return_counts=True)
    return str(values[np.argmax(counts)])


def test_dominant_colour_counts_a_bucket_over_all_its_hue_ranges() -> None:
    # red is both ends of the hue circle (0-20 and 330-360 degrees): one bucket, counted once
    rng = np.random.default_rng(0)
    for _ in range(500):
        img = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        region = rng.random((8, 8)) < 0.5
        assert dominant_colour(img, region) == _reference_dominant(img, region)
    img = np.zeros((1, 4, 3), np.uint8)
    img[0] = [(255, 10, 0), (255, 0, 20), (0, 0, 255), (0, 0, 250)]  # red x2 (both ends), blue x2
    assert dominant_colour(img, np.ones((1, 4), bool)) == "blue"  # a tie: alphabetical first
    img[0, 2] = (255, 0, 10)  # now 3 reds across both ends
    assert dominant_colour(img, np.ones((1, 4), bool)) == "red"
