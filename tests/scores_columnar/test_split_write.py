"""A Parquet file whose columns two writers encode at once is the file one writer writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stylisticbias.scores_columnar.split_write import encode_footer, read_footer, write_split


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "é-accent", ""], dtype=object)
    x = rng.random(rows)
    return pa.table(
        {
            "s": pa.array(words[rng.integers(0, 6, rows)].tolist(), pa.large_string()),
            "i": pa.array(rng.integers(-5, 10**12, rows)),
            "b": pa.array(rng.random(rows) < 0.3),
            "x": pa.array(np.where(x < 0.1, np.nan, x), from_pandas=True),  # NaN -> null
            "u": pa.array(rng.random(rows)),  # unique values: past the dictionary page limit
            "n": pa.nulls(rows, pa.float64()),
        },
        metadata={b"pandas": b'{"columns": []}', b"other": b"1"},
    )


@pytest.mark.parametrize("rows", [1, 1000, 150_000])
def test_the_bytes_of_one_writer(tmp_path: Path, rows: int) -> None:
    table = _table(rows, rows)
    pq.write_table(table, tmp_path / "one.parquet")
    assert write_split(table, table.schema, tmp_path / "two.parquet")
    assert (tmp_path / "two.parquet").read_bytes() == (tmp_path / "one.parquet").read_bytes()
    assert pq.read_table(tmp_path / "two.parquet").equals(table)


def test_footers_read_and_encode_to_their_bytes(tmp_path: Path) -> None:
    pq.write_table(_table(5000, 1), tmp_path / "t.parquet")
    data = (tmp_path / "t.parquet").read_bytes()
    fields, start = read_footer(data)
    assert encode_footer(fields) == data[start:-8]


@pytest.mark.parametrize(
    "table", [pa.table({"a": [1, 2]}), _table(0, 0)], ids=["one-column", "empty"]
)
def test_left_to_one_writer(tmp_path: Path, table: pa.Table) -> None:
    assert not write_split(table, table.schema, tmp_path / "t.parquet")
    assert not (tmp_path / "t.parquet").exists()
