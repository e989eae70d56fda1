"""String columns handed to the Parquet writer dictionary-encoded give the bytes of the same
strings written plainly -- and are handed over as strings where they would not: a value first
seen after the first data page, a dictionary over the writer's dictionary page limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stylisticbias.scores_columnar.arrays import string_array
from stylisticbias.scores_columnar.encoding import PAGE_ROWS, string_column, write_table

N_ROWS = 2 * PAGE_ROWS + 517  # three data pages


def _codes(rng: np.random.Generator, k: int, late: bool, nulls: bool) -> np.ndarray:
    codes = rng.integers(0, k, N_ROWS)
    codes[:k] = rng.permutation(k)  # every value within the first page ...
    if late:  # ... but one, first seen on the last page (33 values: 6 bits, 32: 5 bits)
        codes[codes == k - 1] = 0
        codes[N_ROWS - 3] = k - 1
    if nulls:
        null = rng.random(N_ROWS) < 0.2
        null[:k] = False
        codes[null] = -1
    return codes


def _file_bytes(columns: dict[str, pa.Array], path: Path) -> bytes:
    schema = pa.schema(
        [pa.field(c, pa.large_string()) for c in columns] + [("x", pa.float64())],
        metadata={b"pandas": b"{}"},
    )
    x = pa.array(np.linspace(0.0, 1.0, len(next(iter(columns.values())))))
    write_table(pa.Table.from_arrays([*columns.values(), x], names=schema.names), schema, path)
    return path.read_bytes()


@pytest.mark.parametrize(
    ("k", "late", "nulls", "dictionary"),
    [
        (33, False, False, True),
        (33, False, True, True),
        (33, True, False, False),
        (33, True, True, False),
        (1, False, False, True),
        (3000, False, True, True),
    ],
    ids=["first-page", "first-page-nulls", "late-value", "late-value-nulls", "one", "many"],
)
def test_the_same_bytes_as_the_strings(
    tmp_path: Path, k: int, late: bool, nulls: bool, dictionary: bool
) -> None:
    rng = np.random.default_rng(k + 2 * late + nulls)
    values = string_array([f"value-{i:05d}-{'x' * int(rng.integers(0, 30))}" for i in range(k)])
    codes = _codes(rng, k, late, nulls)
    column = string_column(codes, values)
    assert pa.types.is_dictionary(column.type) == dictionary
    strings = values.take(pa.array(np.where(codes < 0, 0, codes), mask=codes < 0))
    assert column.cast(pa.large_string()).equals(strings)
    got = _file_bytes({"s": column}, tmp_path / "got.parquet")
    want = _file_bytes({"s": strings}, tmp_path / "want.parquet")
    assert got == want


def test_runs_of_rows(tmp_path: Path) -> None:
    """Codes standing for runs of rows (an image's cells): a value first seen in a run that
    starts on the first page is on it."""
    rng = np.random.default_rng(5)
    values = string_array([f"v{i}" for i in range(30)])
    counts = rng.integers(1, 60, 3000)
    codes = rng.integers(0, 30, 3000)
    codes[:30] = np.arange(30)
    counts[:30] = PAGE_ROWS // 29  # the 30th value's run starts on the first page, ends beyond
    column = string_column(codes, values, counts)
    assert pa.types.is_dictionary(column.type)
    strings = values.take(pa.array(np.repeat(codes, counts)))
    assert column.cast(pa.large_string()).equals(strings)
    assert _file_bytes({"s": column}, tmp_path / "a.parquet") == _file_bytes(
        {"s": strings}, tmp_path / "b.parquet"
    )
    late = codes.copy()
    late[late == 29] = 0
    late[-1] = 29
    assert not pa.types.is_dictionary(string_column(late, values, counts).type)


def test_a_dictionary_over_the_page_limit_is_written_as_strings(tmp_path: Path) -> None:
    k = PAGE_ROWS // 2
    values = string_array([f"{i:06d}" + "y" * 120 for i in range(k)])  # > 1 MiB of values
    codes = np.arange(N_ROWS) % k
    column = string_column(codes, values)
    assert not pa.types.is_dictionary(column.type)
    assert column.equals(values.take(pa.array(codes)))


def test_plain_tables_are_written_as_pyarrow_writes_them(tmp_path: Path) -> None:
    table = pa.table({"s": pa.array(["a", "b"], pa.large_string())})
    table = table.replace_schema_metadata({b"k": b"v"})
    write_table(table, table.schema, tmp_path / "a.parquet")
    pq.write_table(table, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
