"""The score partition: unknown images fail as in the pandas engine; its columns are ``SCORES``;
its pandas metadata is what pyarrow writes for a scores frame."""

from __future__ import annotations

from importlib import metadata

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from columnar_tables import dataset, judgments, write

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.schemas import SCORES
from stylisticbias.scores import compute_scores
from stylisticbias.scores_columnar.partition import (
    PARTITION_COLUMNS,
    installed_version,
    pandas_metadata,
    score_partition,
)
from stylisticbias.scores_columnar.reader import reduce_judgments


def test_unknown_images_fail_as_in_thepandas_engine(benchmark: Benchmark, tmp_path) -> None:
    faces, var = dataset(2)
    j = judgments(np.random.default_rng(6), [*faces["image_id"], "F009--base"])
    cells = reduce_judgments(write(j, tmp_path / "j.parquet"), "m1")
    assert cells is not None
    with pytest.raises(StylisticBiasError) as pandas_err:
        compute_scores(j, faces, var, benchmark)
    with pytest.raises(StylisticBiasError) as columnar_err:
        score_partition(cells, pa.Table.from_pandas(faces), pa.Table.from_pandas(var), benchmark)
    assert str(columnar_err.value) == str(pandas_err.value)


def test_partition_columns_are_the_scores_schema() -> None:
    names = [c for c in SCORES.columns if c != "model"]
    assert [c.name for c in PARTITION_COLUMNS] == names
    kinds = {
        "str": pa.large_string(),
        "string[pyarrow]": pa.large_string(),
        "bool": pa.bool_(),
        "int64": pa.int64(),
        "float64": pa.float64(),
    }
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


@pytest.mark.parametrize("package", ["pandas", "numpy", "pyarrow"])
def test_installed_version_is_importlib_metadatas(package: str) -> None:
    assert installed_version(package) == metadata.version(package)
