"""The scores stage's columnar engine writes the pandas engine's file, byte for byte: cells cut
by row-group ends, the exact rows of a ``sampled`` run, a variation whose base face was not
judged, a file without statistics."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from columnar_tables import columnar, dataset, judgments, pandas_engine, write

from stylisticbias.benchmark import Benchmark


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
    faces, var = dataset(5)
    images = [*faces["image_id"], *var["image_id"]]
    if drop_base:
        images.remove("F002--base")
    j = judgments(np.random.default_rng(3), images, exact_rows=exact_rows)
    # row_group_size 0: one row group, no statistics of the values (ranges checked on them)
    path = write(j, tmp_path / "judgments.parquet", row_group_size or None, row_group_size != 0)
    ref = pandas_engine(j, faces, var, benchmark, tmp_path / "pandas")
    got = columnar(path, faces, var, benchmark, tmp_path / "columnar.parquet")
    assert got is not None
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(ref).hexdigest()
    back = pq.read_table(tmp_path / "columnar.parquet").to_pandas()
    assert back["undecided_excluded"].any() and back["phi"].isna().any()  # the cases are there
    assert back["delta"].notna().any()


@pytest.mark.parametrize("statistics", [True, False])
def test_simulated_flags_that_differ_between_rows(
    benchmark: Benchmark, tmp_path: Path, statistics: bool
) -> None:
    """The flag is read where the rows' differ (one value, from the statistics, is not read)."""
    faces, var = dataset(3)
    j = judgments(np.random.default_rng(9), [*faces["image_id"], *var["image_id"]])
    j["simulated"] = np.random.default_rng(10).random(len(j)) < 0.2
    path = write(j, tmp_path / "judgments.parquet", 50, statistics)
    ref = pandas_engine(j, faces, var, benchmark, tmp_path / "pandas")
    got = columnar(path, faces, var, benchmark, tmp_path / "columnar.parquet")
    assert got is not None and got == ref


def test_images_out_of_string_order_are_sorted_like_the_pandas_engine(
    benchmark: Benchmark, tmp_path: Path
) -> None:
    """Each image one run of rows, but the images not in string order: the rows of the partition
    are reordered (the judge stage's sorted files are written in their own order)."""
    faces, var = dataset(4)
    images = [*faces["image_id"], *var["image_id"]]
    images = images[::-1][:5] + images[:-5]
    j = judgments(np.random.default_rng(8), images, sort_images=False)
    path = write(j, tmp_path / "judgments.parquet", 40)
    ref = pandas_engine(j, faces, var, benchmark, tmp_path / "pandas")
    got = columnar(path, faces, var, benchmark, tmp_path / "columnar.parquet")
    assert got is not None and got == ref


def test_the_stage_imports_neither_pandas_nor_pandera() -> None:
    code = (
        "import sys; import stylisticbias.scores, stylisticbias.cli, stylisticbias.config; "
        "print(sorted(m for m in ('pandas', 'pandera', 'scipy', 'torch', 'importlib.metadata', "
        "'pyarrow.compute') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_scoring_imports_neither_pandas_nor_pandera(benchmark: Benchmark, tmp_path: Path) -> None:
    """Not only the imports: a run of the engine (Arrow's ``fill_null`` or ``pa.scalar`` on the
    way, for one, would import pandas: a second of the stage; an Array's ``cast`` or ``take``
    imports ``pyarrow.compute``, 40 ms)."""
    demo = {axis: str(values[-1]) for axis, values in benchmark.demographics.items()}
    faces, var = (t.assign(**demo) for t in dataset(3))
    j = judgments(np.random.default_rng(4), [*faces["image_id"], *var["image_id"]])
    write(j, tmp_path / "judgments.parquet", 40)
    faces.to_parquet(tmp_path / "faces.parquet", index=False)
    var.to_parquet(tmp_path / "variations.parquet", index=False)
    code = (
        "import sys; from pathlib import Path; "
        "from stylisticbias.benchmark import benchmark_from_params; "
        "from stylisticbias.config import default_params; "
        "from stylisticbias.scores import write_columnar_scores; "
        f"d = Path({str(tmp_path)!r}); "
        f"out = write_columnar_scores('m1', d / 'judgments.parquet', d / 'faces.parquet', "
        "d / 'variations.parquet', d / 'scores', benchmark_from_params(default_params()), "
        "undecided_warn=0.01, undecided_max=0.1); "
        "print(out is not None, "
        "sorted(m for m in ('pandas', 'pandera', 'pyarrow.compute') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True []"
