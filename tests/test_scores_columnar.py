"""The scores stage's columnar engine writes the pandas engine's file, byte for byte.

The reference is :func:`stylisticbias.scores.compute_scores` + ``write_model_scores`` (the
stage's implementation before the columnar engine, and its fallback) on random judgments with
variations and base faces: undecided mass (some cells excluded), invalid and null choices, the
exact rows of a ``sampled`` run beside the drawn ones, cells cut by row-group ends, a variation
whose base face was not judged. Tables the engine does not take (exact rows only, unsorted,
two models) are declined, so the stage falls back; its output schema equals ``SCORES``.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.schemas import SCORES
from stylisticbias.score_store import write_model_scores
from stylisticbias.scores import compute_scores
from stylisticbias.scores_columnar import (
    PARTITION_COLUMNS,
    check_scores_table,
    pandas_metadata,
    reduce_judgments,
    score_partition,
)

DEMO = {"age": "young", "gender": "male", "ethnicity": "Asian", "body_type": "thin"}
EDITS = [("hair", "hair_color", "blonde"), ("eyewear", "glasses", "sunglasses")]


def _dataset(n_faces: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    faces = pd.DataFrame([{"image_id": f"F{i:03d}--base", "face_id": f"F{i:03d}", **DEMO}
                          for i in range(n_faces)])  # fmt: skip
    var = pd.DataFrame([{"image_id": f"F{i:03d}--{a}--{v}", "face_id": f"F{i:03d}",
                         "category": c, "attribute": a, "value": v, **DEMO}
                        for i in range(n_faces) for c, a, v in EDITS])  # fmt: skip
    return faces, var


def _judgments(
    rng: np.random.Generator, images: list[str], *, model: str = "m1", exact_rows: bool = False
) -> pd.DataFrame:
    """Rows as the judge stage writes them: sorted by (image, scenario, ordering, seed)."""
    rows = []
    for img in sorted(images):
        for s in (1, 7, 25):
            for o in (1, 2, 3, 4):
                for seed in (0, 1, 2, 3) if exact_rows else (1, 2, 3):
                    p = rng.dirichlet([2, 2, 0.3, 0.05])
                    if rng.random() < 0.1:  # a cell with much undecided mass
                        p = np.array([0.4, 0.4, 0.0, 0.2])
                    c = rng.choice(
                        ["positive", "negative", "invalid", None], p=[0.45, 0.4, 0.1, 0.05]
                    )
                    rows.append({"image_id": img, "face_id": img.split("--")[0], "model": model,
                                 "engine": "simulated", "decoding": "simulated",
                                 "scenario_id": s, "ordering": o, "seed": seed,
                                 "response": "(a)", "choice": None if seed == 0 else c,
                                 "p_pos": p[0], "p_neg": p[1], "p_invalid": p[2],
                                 "p_undecided": p[3], "simulated": True})  # fmt: skip
    return pd.DataFrame(rows)


def _pandas_engine(j: pd.DataFrame, faces, var, benchmark: Benchmark, out: Path) -> bytes:
    scores = compute_scores(j, faces, var, benchmark, undecided_max=0.1)
    return write_model_scores(scores, out, str(j["model"].iloc[0])).read_bytes()


def _columnar(path: Path, faces, var, benchmark: Benchmark, out: Path) -> bytes | None:
    cells = reduce_judgments(path, "m1")
    if cells is None:
        return None
    table = score_partition(
        cells, pa.Table.from_pandas(faces), pa.Table.from_pandas(var), benchmark,
        undecided_max=0.1,
    )  # fmt: skip
    assert table is not None and check_scores_table(table)
    pq.write_table(table, out)
    return out.read_bytes()


def _write(j: pd.DataFrame, path: Path, row_group_size: int | None = None,
           statistics: bool = True) -> Path:  # fmt: skip
    pq.write_table(pa.Table.from_pandas(j, preserve_index=False), path,
                   row_group_size=row_group_size,
                   # without: statistics only of the columns the engine does not read
                   write_statistics=statistics or ["face_id", "engine", "response"])  # fmt: skip
    return path


@pytest.mark.parametrize(
    ("row_group_size", "exact_rows", "drop_base"),
    [
        (None, False, False),
        (7, False, False),
        (100, True, False),
        (50, False, True),
        (0, False, False),
    ],
    ids=[
        "one-row-group",
        "cells-cut-by-row-groups",
        "sampled-with-exact-rows",
        "base-missing",
        "no-statistics",
    ],
)
def test_columnar_engine_writes_the_pandas_engines_bytes(
    benchmark: Benchmark, tmp_path: Path, row_group_size, exact_rows: bool, drop_base: bool
) -> None:
    faces, var = _dataset(5)
    images = [*faces["image_id"], *var["image_id"]]
    if drop_base:
        images.remove("F002--base")
    j = _judgments(np.random.default_rng(3), images, exact_rows=exact_rows)
    # row_group_size 0: one row group, no statistics of the values (ranges checked on them)
    path = _write(j, tmp_path / "judgments.parquet", row_group_size or None, row_group_size != 0)
    ref = _pandas_engine(j, faces, var, benchmark, tmp_path / "pandas")
    got = _columnar(path, faces, var, benchmark, tmp_path / "columnar.parquet")
    assert got is not None
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(ref).hexdigest()
    back = pq.read_table(tmp_path / "columnar.parquet").to_pandas()
    assert back["undecided_excluded"].any() and back["phi"].isna().any()  # the cases are there
    assert back["delta"].notna().any()


def test_tables_the_engine_does_not_take_are_declined(benchmark: Benchmark, tmp_path) -> None:
    faces, var = _dataset(3)
    images = [*faces["image_id"], *var["image_id"]]
    j = _judgments(np.random.default_rng(5), images)
    exact = j.assign(seed=0, choice=None).drop_duplicates(
        ["image_id", "scenario_id", "ordering", "seed"]
    )
    assert reduce_judgments(_write(exact, tmp_path / "exact.parquet"), "m1") is None
    shuffled = j.sample(frac=1.0, random_state=1)
    assert reduce_judgments(_write(shuffled, tmp_path / "shuffled.parquet"), "m1") is None
    two = pd.concat([j, j.assign(model="m2")], ignore_index=True)
    assert reduce_judgments(_write(two, tmp_path / "two.parquet"), "m1") is None
    dup = pd.concat([j, j.iloc[[5]]]).sort_values(["image_id", "scenario_id", "ordering", "seed"])
    assert reduce_judgments(_write(dup, tmp_path / "dup.parquet"), "m1") is None
    for col, value in (("p_pos", 1.5), ("p_invalid", -0.1), ("ordering", 9), ("seed", -1)):
        bad = j.copy()
        bad.loc[4, col] = value
        for stats in (True, False):
            assert reduce_judgments(_write(bad, tmp_path / "bad.parquet", 30, stats), "m1") is None
    assert reduce_judgments(tmp_path / "missing.parquet", "m1") is None


def test_unknown_images_fail_as_in_the_pandas_engine(benchmark: Benchmark, tmp_path) -> None:
    faces, var = _dataset(2)
    j = _judgments(np.random.default_rng(6), [*faces["image_id"], "F009--base"])
    cells = reduce_judgments(_write(j, tmp_path / "j.parquet"), "m1")
    assert cells is not None
    with pytest.raises(StylisticBiasError) as pandas_err:
        compute_scores(j, faces, var, benchmark)
    with pytest.raises(StylisticBiasError) as columnar_err:
        score_partition(cells, pa.Table.from_pandas(faces), pa.Table.from_pandas(var), benchmark)
    assert str(columnar_err.value) == str(pandas_err.value)


def test_partition_columns_are_the_scores_schema() -> None:
    names = [c for c in SCORES.columns if c != "model"]
    assert [c.name for c in PARTITION_COLUMNS] == names
    kinds = {"str": pa.large_string(), "string[pyarrow]": pa.large_string(), "bool": pa.bool_(),
             "int64": pa.int64(), "float64": pa.float64()}  # fmt: skip
    for col in PARTITION_COLUMNS:
        ref = SCORES.columns[col.name]
        assert kinds[str(ref.dtype)] == col.type, col.name
        assert ref.nullable == col.nullable, col.name
        lows, highs = [], []
        for check in ref.checks:
            stats = check.statistics
            lows += [v for k, v in stats.items() if k in ("min_value", "min_val")]
            highs += [v for k, v in stats.items() if k in ("max_value", "max_val")]
        assert (lows[0] if lows else None) == col.low, col.name
        assert (highs[0] if highs else None) == col.high, col.name


def test_pandas_metadata_is_what_pyarrow_writes_for_a_scores_frame() -> None:
    df = pd.DataFrame({c.name: pd.Series([], dtype=object) for c in PARTITION_COLUMNS})
    df.insert(0, "model", pd.Series([], dtype=object))
    df = SCORES.validate(df).drop(columns="model")
    assert pa.Table.from_pandas(df, preserve_index=False).schema.metadata[b"pandas"] == (
        pandas_metadata()
    )


def test_the_stage_imports_neither_pandas_nor_pandera() -> None:
    code = (
        "import sys; import stylisticbias.scores, stylisticbias.cli, stylisticbias.config; "
        "print(sorted(m for m in ('pandas', 'pandera', 'scipy', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
