"""Tables the columnar reader does not take (exact rows only, unsorted, two models, a key twice,
values out of range) are declined, so the stage falls back to the pandas engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
from columnar_tables import dataset, judgments, write

from stylisticbias.benchmark import Benchmark
from stylisticbias.scores_columnar.reader import reduce_judgments


def test_tables_the_engine_does_not_take_are_declined(benchmark: Benchmark, tmp_path) -> None:
    faces, var = dataset(3)
    images = [*faces["image_id"], *var["image_id"]]
    j = judgments(np.random.default_rng(5), images)
    exact = j.assign(seed=0, choice=None).drop_duplicates(
        ["image_id", "scenario_id", "ordering", "seed"]
    )
    assert reduce_judgments(write(exact, tmp_path / "exact.parquet"), "m1") is None
    shuffled = j.sample(frac=1.0, random_state=1)
    assert reduce_judgments(write(shuffled, tmp_path / "shuffled.parquet"), "m1") is None
    two = pd.concat([j, j.assign(model="m2")], ignore_index=True)
    assert reduce_judgments(write(two, tmp_path / "two.parquet"), "m1") is None
    dup = pd.concat([j, j.iloc[[5]]]).sort_values(["image_id", "scenario_id", "ordering", "seed"])
    assert reduce_judgments(write(dup, tmp_path / "dup.parquet"), "m1") is None
    for col, value in (("p_pos", 1.5), ("p_invalid", -0.1), ("ordering", 9), ("seed", -1)):
        bad = j.copy()
        bad.loc[4, col] = value
        for stats in (True, False):
            assert reduce_judgments(write(bad, tmp_path / "bad.parquet", 30, stats), "m1") is None
    assert reduce_judgments(tmp_path / "missing.parquet", "m1") is None
