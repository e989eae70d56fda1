"""The score partition's string columns handed to the Parquet writer already dictionary-encoded.

pyarrow's Parquet writer dictionary-encodes every string column: it hashes each row's string
into a dictionary that grows in order of first appearance, and writes each data page's indices
with the bit width of the dictionary's size when the page is cut. Given an Arrow
``DictionaryArray`` instead, it writes that dictionary and its indices as they are -- no
hashing, no strings materialised per row -- with the bit width of the whole dictionary on every
page. The two files are the same bytes exactly where (:func:`string_column` checks it)

- the dictionary is the column's distinct values in order of first appearance,
- every value appears within the first data page (:data:`PAGE_ROWS` rows), so the growing
  dictionary is already whole when the first page is cut, and
- the dictionary stays under the writer's dictionary page limit (:data:`DICTIONARY_PAGE_LIMIT`),
  so the hashing writer would not have fallen back to plain encoding.

Elsewhere the column is materialised as strings, as before. The file's Arrow schema is still
the partition's (``large_string`` columns): :func:`write_table` stores it as the writer would
have for the materialised table.
"""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from stylisticbias.scores_columnar.arrays import compute, to_arrow
from stylisticbias.scores_columnar.split_write import write_split

#: rows per data page: pyarrow's ``max_rows_per_page`` default, passed explicitly
PAGE_ROWS = 20_000
#: the dictionary page limit (pyarrow's ``dictionary_pagesize_limit`` default: 1 MiB), beyond
#: which the hashing writer falls back to plain encoding
DICTIONARY_PAGE_LIMIT = 1 << 20


def string_column(
    codes: np.ndarray, values: pa.Array, counts: np.ndarray | None = None
) -> pa.Array:
    """The strings ``values[codes]`` (``values``: ``large_string``; ``codes``: int, -1 for null)
    as the partition's column: a dictionary array where the Parquet writer encodes it to the
    same bytes as the strings (see the module docstring), else the strings. ``counts``: each
    code stands for that many consecutive rows (an image's run of cells); ``None``: one row."""
    rows = np.arange(min(len(codes), PAGE_ROWS)) if counts is None else np.cumsum(counts) - counts
    n_rows = len(codes) if counts is None else int(counts.sum())
    head = codes[: len(rows)][rows < PAGE_ROWS]  # the codes whose first row is in the first page
    k = len(values)
    first = np.full(k, n_rows, dtype=np.int64)
    np.minimum.at(first, head[head >= 0], rows[: len(head)][head >= 0])
    seen = first < n_rows
    used = np.bincount(codes[codes >= 0], minlength=k) > 0
    order = np.flatnonzero(seen)
    order = order[np.argsort(first[order], kind="stable")]
    dictionary = compute("take", values, to_arrow(order))
    ends = np.frombuffer(dictionary.buffers()[1], dtype=np.int64)[dictionary.offset :]
    size = 4 * len(order) + int(ends[len(order)] - ends[0])  # what the dictionary page holds
    if not n_rows or bool(np.any(used & ~seen)) or size >= DICTIONARY_PAGE_LIMIT:
        per_row = codes if counts is None else np.repeat(codes, counts)
        return compute("take", values, to_arrow(per_row, null=per_row < 0))
    remap = np.full(k + 1, -1, dtype=np.int32)  # the last entry: null (-1) stays null
    remap[order] = np.arange(len(order), dtype=np.int32)
    indices = remap[codes] if counts is None else np.repeat(remap[codes], counts)
    return pa.DictionaryArray.from_arrays(to_arrow(indices, null=indices < 0), dictionary)


def write_table(table: pa.Table, schema: pa.Schema, path: Path) -> None:
    """Write ``table`` (string columns plain or as :func:`string_column` made them) to ``path``
    as the bytes ``pq.write_table`` writes for it with its columns of ``schema`` (their types
    and the schema's metadata, which the file stores beside the Arrow schema), its columns
    encoded by two writers at once (:mod:`~stylisticbias.scores_columnar.split_write`)."""
    if write_split(table, schema, path, max_rows_per_page=PAGE_ROWS):
        return
    metadata = dict(schema.metadata or {})
    # what the writer stores for a table of ``schema``: its metadata, then the schema itself
    metadata[b"ARROW:schema"] = base64.b64encode(schema.serialize().to_pybytes())
    with pq.ParquetWriter(
        path, table.schema, store_schema=False, max_rows_per_page=PAGE_ROWS
    ) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata(metadata)
