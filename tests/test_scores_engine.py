"""The columnar scores engine equals grouping by the key columns in pandas to the last bit, and
reading the judgments through the vectorised schema checks fails exactly as the full check does.

The reference is the plain ``groupby(["model", "image_id", "scenario_id"], sort=False)``
computation the engine replaced, on random judgments: several models, drawn and exact rows,
sorted and shuffled, undecided mass.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks.grouping import KEYS, Groups
from stylisticbias.schemas import JUDGMENTS, read_table
from stylisticbias.scores import SCORE_COLUMNS, compute_scores, read_judgments


def _judgments(rng: np.random.Generator, exact: bool, n_img: int = 30) -> pd.DataFrame:
    rows = []
    for model in ("m1", "m2"):
        for i in range(n_img):
            for s in (1, 7, 25):
                for o in (1, 2, 3, 4):
                    for seed in (0,) if exact else (1, 2, 3):
                        p = rng.dirichlet([2, 2, 0.3, 0.1])
                        c = rng.choice(["positive", "negative", "invalid"])
                        rows.append(
                            {
                                "image_id": f"F{i:03d}--base",
                                "face_id": f"F{i:03d}",
                                "model": model,
                                "engine": "x",
                                "decoding": "simulated",
                                "scenario_id": s,
                                "ordering": o,
                                "seed": seed,
                                "response": None,
                                "choice": None if exact else c,
                                "p_pos": p[0],
                                "p_neg": p[1],
                                "p_invalid": p[2],
                                "p_undecided": p[3],
                                "simulated": bool(i % 2),
                            }
                        )
    return pd.DataFrame(rows)


def _reference_sums(rows: pd.DataFrame) -> pd.DataFrame:
    g = rows.assign(_v=rows["p_pos"] + rows["p_neg"]).groupby(KEYS, sort=False)
    return g.agg(
        pos=("p_pos", "sum"),
        valid=("_v", "sum"),
        und=("p_undecided", "mean"),
        sim=("simulated", "any"),
        n=("p_pos", "size"),
    ).reset_index()


@pytest.mark.parametrize("shuffle", [False, True], ids=["sorted", "shuffled"])
def test_group_reductions_equal_pandas_groupby_bit_for_bit(shuffle: bool) -> None:
    rows = _judgments(np.random.default_rng(1), exact=False)
    if shuffle:
        rows = rows.sample(frac=1.0, random_state=2).reset_index(drop=True)
    ref = _reference_sums(rows)
    g = Groups(rows)
    red = g.reduce(
        pos=(rows["p_pos"], "sum"),
        valid=(rows["p_pos"] + rows["p_neg"], "sum"),
        und=(rows["p_undecided"], "mean"),
        sim=(rows["simulated"], "any"),
    )
    got = g.keys.assign(**red, n=g.lengths)
    assert (g.labels is None) != shuffle  # sorted: runs (reduceat); shuffled: pandas' kernels
    pd.testing.assert_frame_equal(got[ref.columns], ref, check_dtype=False, check_exact=True)
    for c in ("pos", "valid", "und"):  # identical bits, not merely close
        assert np.array_equal(got[c].to_numpy().view(np.int64), ref[c].to_numpy().view(np.int64))


def _tables(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    demo = {"age": "adult", "gender": "male", "ethnicity": "Asian", "body_type": "thin"}
    faces = pd.DataFrame(
        [{"image_id": i, "face_id": i.split("--")[0], **demo} for i in rows["image_id"].unique()]
    )
    var = pd.DataFrame(columns=["image_id", "face_id", "category", "attribute", "value", *demo])
    return faces, var


@pytest.mark.parametrize("exact", [False, True], ids=["drawn", "exact"])
def test_scores_of_categorical_and_shuffled_inputs(benchmark: Benchmark, exact: bool) -> None:
    rows = _judgments(np.random.default_rng(2), exact=exact, n_img=12)
    faces, var = _tables(rows)
    ref = compute_scores(rows, faces, var, benchmark)
    cat = rows.astype({"model": "category", "image_id": "category", "choice": "category"})
    pd.testing.assert_frame_equal(compute_scores(cat, faces, var, benchmark), ref, check_exact=True)
    # another row order sums in another order (as pandas does): equal to rounding
    shuffled = rows.sample(frac=1.0, random_state=3).reset_index(drop=True)
    pd.testing.assert_frame_equal(
        compute_scores(shuffled, faces, var, benchmark), ref, rtol=1e-12, atol=1e-15
    )


def test_read_judgments_checks_like_the_schema(tmp_path) -> None:
    rows = _judgments(np.random.default_rng(4), exact=False, n_img=4)
    path = tmp_path / "judgments.parquet"
    rows.to_parquet(path, index=False)
    fast = read_judgments(path)
    full = read_table(path, JUDGMENTS)[list(SCORE_COLUMNS)]
    pd.testing.assert_frame_equal(fast.astype(full.dtypes.to_dict()), full, check_exact=True)
    for col, bad in (("p_pos", 1.5), ("ordering", 7), ("choice", "maybe"), ("seed", -1)):
        broken = rows.copy()
        broken.loc[5, col] = bad
        broken.to_parquet(path, index=False)
        with pytest.raises(StylisticBiasError) as fast_err:
            read_judgments(path)
        with pytest.raises(StylisticBiasError) as full_err:
            read_table(path, JUDGMENTS)
        assert str(fast_err.value) == str(full_err.value) and "row 5" in str(fast_err.value)
    dup = pd.concat([rows, rows.iloc[[3]]], ignore_index=True)
    dup.to_parquet(path, index=False)
    with pytest.raises(StylisticBiasError, match="judgments schema"):
        read_judgments(path)
