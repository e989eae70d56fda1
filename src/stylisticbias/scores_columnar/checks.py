"""The judgments table as the columnar engine reads it: its columns, types and value checks.

The checks of the ``JUDGMENTS`` schema, vectorised: the file's columns and types, nulls (from the
Parquet statistics for columns not read), value ranges (from the statistics where the file has
them), allowed values and unique keys. A table that fails one is handed to the full schema
validation, whose one-line error names the file, column and row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from stylisticbias.scores_columnar.arrays import (
    ARROW_TYPES,
    as_numpy,
    cast,
    column_codes,
    string_array,
    to_arrow,
)

SCORE_INPUTS = (
    "image_id",
    "model",
    "decoding",
    "scenario_id",
    "ordering",
    "seed",
    "choice",
    "p_pos",
    "p_neg",
    "p_invalid",
    "p_undecided",
    "simulated",
)
#: string key columns read dictionary-encoded (integer codes, no string hashing)
DICTIONARY_COLUMNS = ("image_id", "model", "decoding", "choice")
CHOICES = ("positive", "negative", "invalid")
DECODINGS = ("generate", "sampled", "exact", "simulated")
#: the columns of a judgments table (``JUDGMENTS``; ``JUDGMENT_RECORDS`` adds ``image_sha256``)
JUDGMENT_FIELDS = (
    "image_id",
    "face_id",
    "model",
    "engine",
    "decoding",
    "scenario_id",
    "ordering",
    "seed",
    "response",
    "choice",
    "p_pos",
    "p_neg",
    "p_invalid",
    "p_undecided",
    "simulated",
)
NULLABLE_INPUTS = frozenset({"response", "choice"})


def _is_string(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


_INPUT_KINDS: dict[str, Callable[[pa.DataType], bool]] = {
    **{
        c: _is_string
        for c in (
            "image_id",
            "face_id",
            "model",
            "engine",
            "decoding",
            "response",
            "choice",
            "image_sha256",
        )
    },
    **{c: pa.types.is_integer for c in ("scenario_id", "ordering", "seed")},
    **{c: pa.types.is_floating for c in ("p_pos", "p_neg", "p_invalid", "p_undecided")},
    "simulated": pa.types.is_boolean,
}


# --------------------------------------------------------------------------- reading judgments
def read_judgments_table(
    path: str | Path, columns: Sequence[str] = SCORE_INPUTS
) -> pa.Table | None:
    """The ``columns`` of a judgments table as Arrow, one chunk each (the
    ``DICTIONARY_COLUMNS`` as dictionary arrays with one dictionary), or ``None`` when any check
    of the ``JUDGMENTS`` schema fails.

    The checks are vectorised: the file's columns and types, nulls (from the Parquet statistics
    for columns not read), value ranges, allowed values and unique (model, image, scenario,
    ordering, seed) keys. ``None`` sends the caller to the full schema validation, whose
    one-line error names the file, column and row. The file is read one row group at a time
    into arrays of the final size (one thread, no second copy of the table: at 4.87M rows the
    memory -- and the system time of touching it -- is what a read costs).
    """
    cols = list(columns)
    try:
        pf = pq.ParquetFile(path, read_dictionary=[c for c in DICTIONARY_COLUMNS if c in cols])
    except Exception:  # missing or unreadable: the full check says which
        return None
    if not schema_ok(pf, cols):
        return None
    try:
        read = _read_columns(pf, cols)
    except Exception:  # unreadable row group: the full check says which
        return None
    if read is None:
        return None
    table, dictionaries = read

    def within(name: str, lo: float, hi: float | None = None) -> bool:
        if name not in cols or not table.num_rows:
            return True
        v = as_numpy(table.column(name))
        lo_v, hi_v = np.fmin.reduce(v), np.fmax.reduce(v)  # NaN aside, like Arrow's min_max
        return bool(np.isnan(lo_v) or (lo_v >= lo and (hi is None or hi_v <= hi)))

    def allowed(name: str, values: tuple[str, ...]) -> bool:
        return name not in cols or set(dictionaries[name]) <= set(values)

    ok = (
        within("scenario_id", 1, 10_000)
        and within("ordering", 1, 4)
        and within("seed", 0)
        and all(within(c, 0.0, 1.0) for c in ("p_pos", "p_neg", "p_invalid", "p_undecided"))
        and allowed("decoding", DECODINGS)
        and allowed("choice", CHOICES)
    )
    if not ok:
        return None
    key_cols = ("model", "image_id", "scenario_id", "ordering", "seed")
    if all(c in cols for c in key_cols) and not unique_keys(table, key_cols):
        return None
    return table


def _read_columns(
    pf: pq.ParquetFile, cols: list[str]
) -> tuple[pa.Table, dict[str, list[str]]] | None:
    """``cols`` of every row group copied into arrays of the final size (dictionary columns as
    codes into one dictionary of the values seen), or ``None`` on a null where none may be."""
    n = pf.metadata.num_rows
    schema = pf.schema_arrow
    out: dict[str, np.ndarray] = {}
    chunks: dict[str, list[pa.Array]] = {}  # other strings (the response texts): kept as read
    codes: dict[str, dict[str, int]] = {}
    for c in cols:
        t = schema.field(c).type
        if c in DICTIONARY_COLUMNS:
            out[c], codes[c] = np.empty(n, dtype=np.int32), {}
        elif pa.types.is_integer(t):
            out[c] = np.empty(n, dtype=np.int64)
        elif pa.types.is_floating(t):
            out[c] = np.empty(n, dtype=np.float64)
        elif pa.types.is_boolean(t):
            out[c] = np.empty(n, dtype=np.bool_)
        else:
            chunks[c] = []
    at = dict.fromkeys(cols, 0)
    for rg in range(pf.metadata.num_row_groups):
        group = pf.read_row_group(rg, columns=cols, use_threads=False)
        for c in cols:
            col = group.column(c)
            if col.null_count and c not in NULLABLE_INPUTS:
                return None
            for chunk in col.chunks:
                k, i = len(chunk), at[c]
                at[c] += k
                if c in chunks:
                    chunks[c].append(chunk)
                elif c in codes:  # this chunk's dictionary -> the global codes (-1: null)
                    seen = codes[c]
                    local = [seen.setdefault(v, len(seen)) for v in chunk.dictionary.to_pylist()]
                    lut = np.array([*local, -1], dtype=np.int32)
                    out[c][i : i + k] = lut[as_numpy(chunk.indices, fill=-1)]
                else:
                    out[c][i : i + k] = as_numpy(cast(chunk, ARROW_TYPES[out[c].dtype.str]))
    arrays = []
    for c in cols:
        if c in chunks:
            arrays.append(pa.chunked_array(chunks[c], schema.field(c).type).combine_chunks())
        elif c in codes:
            arrays.append(
                pa.DictionaryArray.from_arrays(
                    to_arrow(out[c], null=out[c] < 0), string_array(list(codes[c]))
                )
            )
        else:
            arrays.append(to_arrow(out[c]))
    return pa.Table.from_arrays(arrays, names=cols), {c: list(v) for c, v in codes.items()}


def unique_keys(table: pa.Table, columns: Sequence[str]) -> bool:
    """Whether the rows' values of ``columns`` (dictionary or integer columns) are unique: one
    pass when the table is sorted by them (as the judge stage writes it), else a count."""
    key = sorted_key(table, columns)
    if len(key) < 2 or bool(np.all(key[1:] > key[:-1])):
        return True
    return len(np.unique(key)) == len(key)


def sorted_key(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """One int64 per row that orders the rows as their ``columns`` do (dictionary indices,
    integer values), lexicographically; computed in place, one pass per column."""
    key = np.zeros(table.num_rows, dtype=np.int64)
    for c in columns:
        code = column_codes(table.column(c))
        if not len(code):
            continue
        lo, hi = int(code.min()), int(code.max())
        if hi == lo:
            continue  # one value: no order to add
        key *= hi - lo + 1
        key += code
    return key


def schema_ok(pf: pq.ParquetFile, cols: list[str]) -> bool:
    """The file's columns and types are a judgments table's, and the columns not read hold no
    null where the schema has none (their Parquet statistics)."""
    schema = pf.schema_arrow
    names = set(schema.names)
    if names not in ({*JUDGMENT_FIELDS}, {*JUDGMENT_FIELDS, "image_sha256"}) or not names >= {
        *cols
    }:
        return False
    if not all(_INPUT_KINDS[n](schema.field(n).type) for n in schema.names):
        return False
    meta = pf.metadata
    for i, name in enumerate(schema.names):
        if name in NULLABLE_INPUTS or name in cols:
            continue
        for rg in range(meta.num_row_groups):
            stats = meta.row_group(rg).column(i).statistics
            if stats is None or not stats.has_null_count or stats.null_count:
                return False
    return True


RANGES = {
    "scenario_id": (1, 10_000),
    "ordering": (1, 4),
    "seed": (0, None),
    "p_pos": (0.0, 1.0),
    "p_neg": (0.0, 1.0),
    "p_invalid": (0.0, 1.0),
    "p_undecided": (0.0, 1.0),
}


def statistic(pf: pq.ParquetFile, column: str, which: str) -> float | None:
    """The min or max of a column over the row groups' statistics; ``None`` where a row group
    has none."""
    i = pf.schema_arrow.names.index(column)
    got = []
    for rg in range(pf.metadata.num_row_groups):
        st = pf.metadata.row_group(rg).column(i).statistics
        if st is None or not st.has_min_max:
            return None
        got.append(st.min if which == "min" else st.max)
    return (min(got) if which == "min" else max(got)) if got else None


def constant(pf: pq.ParquetFile, column: str) -> object | None:
    """The one value of a column without nulls, from the row groups' statistics (min == max in
    every row group, no null); ``None`` where they do not show one."""
    i = pf.schema_arrow.names.index(column)
    value = None
    for rg in range(pf.metadata.num_row_groups):
        st = pf.metadata.row_group(rg).column(i).statistics
        if st is None or not st.has_min_max or not st.has_null_count or st.null_count:
            return None
        if st.min != st.max or (value is not None and st.min != value):
            return None
        value = st.min
    return value


def ranges_from_statistics(pf: pq.ParquetFile) -> set[str] | None:
    """The ranged columns whose statistics show them in range (``None``: one is out of it)."""
    ok = set()
    for c, (lo, hi) in RANGES.items():
        lo_v, hi_v = statistic(pf, c, "min"), statistic(pf, c, "max")
        if lo_v is None or hi_v is None:
            continue  # no statistics: checked on the values
        if lo_v < lo or (hi is not None and hi_v > hi):
            return None
        ok.add(c)
    return ok
