"""The scores stage's columnar engine: judgments Parquet -> Arrow / numpy -> the score partition.

The ``scores@MODEL`` stage does little arithmetic over millions of judgment rows; this module
does it without pandas or pandera (neither is imported): the judgments are read as Arrow
columns (strings dictionary-encoded), checked with vectorised Arrow kernels, grouped by
(image, scenario) through one integer key, reduced with numpy over the runs of rows of each cell
(``np.add.reduceat``: the sums and means the pandas engine of :mod:`stylisticbias.scores` takes
for sorted groups, so every float is the same to the last bit), joined to the dataset tables by
integer indices and written as the same Parquet bytes (the schema, its pandas metadata, the
row order) as :func:`stylisticbias.score_store.write_model_scores` writes from the pandas
engine's table. The output is checked once against :data:`PARTITION_COLUMNS` -- the ``SCORES``
schema's columns, types, nullability and ranges, kept equal to the pandera schema by a test.

It scores what the judge stage writes for the paper's reader: the ``binary_choice`` task,
``judge.parser: paper``, ``analysis.definitions: paper``, drawn rows (seed >= 1: ``generate``,
``sampled``, ``simulated``), one model, every cell one run of rows. Anything else -- exact-only
tables (the paper estimator's seeded draws), the official reader, unsorted or otherwise unusual
tables, and every table that fails a check -- returns ``None`` from :func:`score_partition`, and
the stage falls back to the pandas engine (:func:`stylisticbias.scores.compute_scores`), which
computes the same numbers and raises the one-line errors naming the file, row and column.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stylisticbias.benchmark import DEMOGRAPHIC_AXES
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks.bounds import phi_bounds

if TYPE_CHECKING:
    from stylisticbias.benchmark import Benchmark

log = logging.getLogger(__name__)

#: the judgments columns the scores read (``response`` only for the official parser)
SCORE_INPUTS = ("image_id", "model", "decoding", "scenario_id", "ordering", "seed", "choice",
                "p_pos", "p_neg", "p_invalid", "p_undecided", "simulated")  # fmt: skip
#: string key columns read dictionary-encoded (integer codes, no string hashing)
DICTIONARY_COLUMNS = ("image_id", "model", "decoding", "choice")
CHOICES = ("positive", "negative", "invalid")
DECODINGS = ("generate", "sampled", "exact", "simulated")
#: the columns of a judgments table (``JUDGMENTS``; ``JUDGMENT_RECORDS`` adds ``image_sha256``)
JUDGMENT_FIELDS = ("image_id", "face_id", "model", "engine", "decoding", "scenario_id",
                   "ordering", "seed", "response", "choice", "p_pos", "p_neg", "p_invalid",
                   "p_undecided", "simulated")  # fmt: skip
_NULLABLE_INPUTS = frozenset({"response", "choice"})


def _is_string(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


_INPUT_KINDS: dict[str, Callable[[pa.DataType], bool]] = {
    **{c: _is_string for c in ("image_id", "face_id", "model", "engine", "decoding", "response",
                               "choice", "image_sha256")},
    **{c: pa.types.is_integer for c in ("scenario_id", "ordering", "seed")},
    **{c: pa.types.is_floating for c in ("p_pos", "p_neg", "p_invalid", "p_undecided")},
    "simulated": pa.types.is_boolean,
}  # fmt: skip


# --------------------------------------------------------------------------- the output schema
@dataclass(frozen=True)
class ScoreColumn:
    """One column of a score partition: its Arrow type, whether it may be null and the closed
    range its values must lie in (the ``SCORES`` pandera schema's column, ``model`` aside)."""

    name: str
    type: pa.DataType
    nullable: bool = False
    low: float | None = None
    high: float | None = None


_PROB = {"low": 0.0, "high": 1.0}
_SHIFT = {"low": -1.0, "high": 1.0}
#: the columns of ``data/scores/model=<name>/part-0.parquet``, in order (``model`` is the
#: partition key, not a column of the file); a test keeps them equal to ``schemas.SCORES``
PARTITION_COLUMNS: tuple[ScoreColumn, ...] = (
    ScoreColumn("image_id", pa.large_string()),
    ScoreColumn("face_id", pa.large_string()),
    ScoreColumn("is_base", pa.bool_()),
    ScoreColumn("category", pa.large_string(), nullable=True),
    ScoreColumn("attribute", pa.large_string(), nullable=True),
    ScoreColumn("value", pa.large_string(), nullable=True),
    *(ScoreColumn(a, pa.large_string()) for a in DEMOGRAPHIC_AXES),
    ScoreColumn("scenario_id", pa.int64()),
    ScoreColumn("scenario_category", pa.large_string()),
    ScoreColumn("phi", pa.float64(), True, **_PROB),
    ScoreColumn("n_valid", pa.float64(), low=0.0),
    ScoreColumn("n", pa.int64(), low=0.0),
    ScoreColumn("delta", pa.float64(), True, **_SHIFT),
    ScoreColumn("simulated", pa.bool_()),
    ScoreColumn("undecided", pa.float64(), **_PROB),
    ScoreColumn("undecided_excluded", pa.bool_()),
    ScoreColumn("phi_low", pa.float64(), True, **_PROB),
    ScoreColumn("phi_high", pa.float64(), True, **_PROB),
    ScoreColumn("delta_low", pa.float64(), True, **_SHIFT),
    ScoreColumn("delta_high", pa.float64(), True, **_SHIFT),
    ScoreColumn("phi_paper", pa.float64(), True, **_PROB),
    ScoreColumn("phi_exact", pa.float64(), True, **_PROB),
    ScoreColumn("delta_paper", pa.float64(), True, **_SHIFT),
    ScoreColumn("delta_exact", pa.float64(), True, **_SHIFT),
)

#: pandas' name of each Arrow type in the pandas metadata of a file written from a DataFrame
_PANDAS_TYPES = {pa.large_string(): ("object", "str"), pa.bool_(): ("bool", "bool"),
                 pa.int64(): ("int64", "int64"), pa.float64(): ("float64", "float64")}  # fmt: skip


def pandas_metadata(columns: Sequence[ScoreColumn] = PARTITION_COLUMNS) -> bytes:
    """The ``pandas`` schema metadata pyarrow writes for a DataFrame of these columns (pandas'
    default dtypes: ``str``, ``bool``, ``int64``, ``float64``; no index), built without pandas,
    so that a file written here reads back into the same DataFrame -- and is the same bytes."""
    cols = [{"name": c.name, "field_name": c.name, "pandas_type": _PANDAS_TYPES[c.type][0],
             "numpy_type": _PANDAS_TYPES[c.type][1], "metadata": None}
            for c in columns]  # fmt: skip
    return json.dumps(
        {
            "index_columns": [],
            "column_indexes": [],
            "columns": cols,
            "attributes": {},
            "creator": {"library": "pyarrow", "version": pa.__version__},
            "pandas_version": metadata.version("pandas"),
        }
    ).encode("utf8")


def check_scores_table(table: pa.Table) -> bool:
    """Whether ``table`` holds exactly :data:`PARTITION_COLUMNS`: names and types in order, no null
    where none may be, every value in its range and one row per (image, scenario), sorted."""
    if table.schema.names != [c.name for c in PARTITION_COLUMNS]:
        return False
    for c in PARTITION_COLUMNS:
        col = table.column(c.name)
        if col.type != c.type or (not c.nullable and col.null_count):
            return False
        if c.low is not None or c.high is not None:
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is None:  # all null
                continue
            if (c.low is not None and lo < c.low) or (c.high is not None and hi > c.high):
                return False
    sid = _np(table.column("scenario_id"))
    ids = table.column("image_id")
    img = pc.not_equal(ids.slice(1), ids.slice(0, max(len(ids) - 1, 0)))
    same_image = ~_np(img)
    return not bool(np.any(same_image & (sid[1:] <= sid[:-1])))


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
    if not _schema_ok(pf, cols):
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
        v = _np(table.column(name))
        lo_v, hi_v = np.fmin.reduce(v), np.fmax.reduce(v)  # NaN aside, like Arrow's min_max
        return bool(np.isnan(lo_v) or (lo_v >= lo and (hi is None or hi_v <= hi)))

    def allowed(name: str, values: tuple[str, ...]) -> bool:
        return name not in cols or set(dictionaries[name]) <= set(values)

    ok = (within("scenario_id", 1, 10_000) and within("ordering", 1, 4) and within("seed", 0)
          and all(within(c, 0.0, 1.0) for c in ("p_pos", "p_neg", "p_invalid", "p_undecided"))
          and allowed("decoding", DECODINGS) and allowed("choice", CHOICES))  # fmt: skip
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
            if col.null_count and c not in _NULLABLE_INPUTS:
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
                    out[c][i : i + k] = lut[_np(chunk.indices, fill=-1)]
                else:
                    out[c][i : i + k] = _np(chunk.cast(_ARROW_TYPES[out[c].dtype.str]))
    arrays = []
    for c in cols:
        if c in chunks:
            arrays.append(pa.chunked_array(chunks[c], schema.field(c).type).combine_chunks())
        elif c in codes:
            arrays.append(
                pa.DictionaryArray.from_arrays(_arrow(out[c], null=out[c] < 0),
                                               _string_array(list(codes[c])))
            )  # fmt: skip
        else:
            arrays.append(_arrow(out[c]))
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


def _one(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One array (a one-chunk column's chunk: ``combine_chunks`` would copy it)."""
    if isinstance(col, pa.Array):
        return col
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


_NUMPY_TYPES = {"double": "float64", "float": "float32", "halffloat": "float16"}


#: Arrow types of the numpy dtypes the engine hands to Arrow
_ARROW_TYPES = {"|b1": pa.bool_(), "<i4": pa.int32(), "<i8": pa.int64(), "<f8": pa.float64()}


def _arrow(values: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    """A numpy array as Arrow without a copy, NaN (or ``null``'s rows) as null, as pyarrow
    converts a DataFrame's column. Not ``pa.array``: on a numpy array it imports pandas."""
    v = np.ascontiguousarray(values)
    if v.dtype.kind == "f":
        nan = np.isnan(v)
        null = nan if null is None else (null | nan)
    if v.dtype.kind == "i" and v.dtype.itemsize not in (4, 8):
        v = v.astype(np.int64)
    nulls = 0 if null is None else int(null.sum())
    validity = pa.py_buffer(np.packbits(~null, bitorder="little")) if nulls else None
    if v.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(v, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), len(v), [validity, data], null_count=nulls)
    typ = _ARROW_TYPES[v.dtype.str]
    return pa.Array.from_buffers(typ, len(v), [validity, pa.py_buffer(v)], null_count=nulls)


def _string_array(values: Sequence[str]) -> pa.Array:
    """Strings as a ``large_string`` array (not ``pa.array``, which imports pandas)."""
    data = [v.encode("utf8") for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.large_string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    )


def _np(col: pa.ChunkedArray | pa.Array, fill: int | None = None) -> np.ndarray:
    """A numeric or boolean Arrow column as a numpy array (no copy where it can), nulls replaced
    by ``fill``. Not pyarrow's ``to_numpy``: it imports pandas (a second of the stage)."""
    arr = _one(col)
    if fill is not None and arr.null_count:
        arr = arr.fill_null(fill)
    if pa.types.is_boolean(arr.type):
        return _np(arr.cast(pa.uint8()), fill).view(np.bool_)
    if arr.null_count:
        raise ValueError(f"{arr.type} array with {arr.null_count} null(s) and no fill value")
    dtype = np.dtype(_NUMPY_TYPES.get(str(arr.type), str(arr.type)))
    return np.frombuffer(arr.buffers()[1], dtype=dtype)[arr.offset : arr.offset + len(arr)]


def column_codes(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Integer codes of a key column: a dictionary's indices (one dictionary: see
    :func:`read_judgments_table`) or an integer column's values (no copy)."""
    arr = _one(col)
    if pa.types.is_dictionary(arr.type):
        return _np(arr.indices, fill=-1)
    return _np(arr)


# --------------------------------------------------------------------------- undecided mass
def undecided_excluded(undecided: np.ndarray, warn: float, limit: float) -> np.ndarray:
    """Which cells' undecided (pruned) mass exceeds ``limit`` (``judge.undecided_max``): their
    phi is excluded. Cells above ``warn`` (``judge.undecided_warn``) are counted in one warning."""
    if not 0.0 <= warn <= limit <= 1.0:
        raise StylisticBiasError(
            f"params.yaml judge: undecided_warn {warn!r} / undecided_max {limit!r}: need "
            "0 <= undecided_warn <= undecided_max <= 1"
        )
    u = np.asarray(undecided, dtype=np.float64)
    n_warn = int(np.sum(u > warn))
    out = u > limit
    if n_warn:
        log.warning(
            "scores: %d of %d image x scenario rows have undecided (pruned) mass > %g "
            "(mean %.4f, max %.4f); %d above undecided_max %g are excluded (phi null). Undecided "
            "mass is left out of phi, which is unbiased only if it would split like the rest: "
            "see undecided_mass.csv for the bounds on every SBS",
            n_warn,
            len(u),
            warn,
            float(np.mean(u)) if len(u) else 0.0,
            float(np.max(u)) if len(u) else 0.0,
            int(out.sum()),
            limit,
        )
    return out


# --------------------------------------------------------------------------- scoring
def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` where ``den > 0``, NaN elsewhere (pandas' ``num / den.where(den > 0)``)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, np.nan), np.nan)


def _strings(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = _one(col)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr.cast(pa.large_string())


def _dataset(faces: pa.Table, variations: pa.Table) -> pa.Table | None:
    """Faces and variations as one table of image metadata (``is_base``, the attribute columns
    null on base faces), or ``None`` when a column is missing, null or not unique."""
    demo = list(DEMOGRAPHIC_AXES)
    try:
        f = faces.select(["image_id", "face_id", *demo])
        v = variations.select(["image_id", "face_id", "category", "attribute", "value", *demo])
    except KeyError:
        return None
    none = pa.nulls(faces.num_rows, pa.large_string())
    parts = []
    for t, base in ((f, True), (v, False)):
        cols = {c: _strings(t.column(c)) for c in t.column_names}
        if any(a.null_count for a in cols.values()):
            return None
        if base:
            cols.update(category=none, attribute=none, value=none)
        cols["is_base"] = _arrow(np.full(t.num_rows, base))
        parts.append(pa.table({c: cols[c] for c in ("image_id", "face_id", "is_base", "category",
                                                    "attribute", "value", *demo)}))  # fmt: skip
    meta = pa.concat_tables(parts).combine_chunks()
    ids = meta.column("image_id")
    if pc.count_distinct(ids).as_py() != meta.num_rows:  # an image in both tables, or twice
        return None
    if pc.count_distinct(_strings(f.column("face_id"))).as_py() != f.num_rows:
        return None
    return meta


@dataclass(frozen=True)
class Cells:
    """One model's drawn judgments reduced per (image, scenario) cell, in the order of the rows:
    the cell's image (``image``: codes into ``images``) and scenario, its rows (``n``), positive
    and valid answers, whether any row is simulated, and the sums of its rows' ``p_undecided``,
    ``p_pos`` and ``p_pos + p_neg`` (``np.add.reduceat`` over the cell's run of rows)."""

    images: list[str]
    image: np.ndarray
    scenario: np.ndarray
    n: np.ndarray
    pos: np.ndarray
    valid: np.ndarray
    simulated: np.ndarray
    undecided_sum: np.ndarray
    p_pos_sum: np.ndarray
    p_valid_sum: np.ndarray


_CELL_FIELDS = ("image", "scenario", "n", "pos", "valid", "simulated", "undecided_sum",
                "p_pos_sum", "p_valid_sum")  # fmt: skip


def reduce_judgments(path: str | Path, model: str) -> Cells | None:
    """``model``'s drawn judgments in ``path`` reduced per cell, one row group at a time (a
    cell cut by a row group's end is carried into the next), with the checks of
    :func:`read_judgments_table` on the way (value ranges from the row groups' Parquet
    statistics where the file has them); ``None`` where they fail, where the rows are not
    sorted by (image, scenario, ordering, seed) -- each cell one run, every key once -- or hold
    no drawn row, another model, or NaN masses: the caller then reads the whole table.

    Memory is a row group and the cells, not the table: at 4.87M rows, touching the memory of
    a whole-table read costs the stage more system time than the arithmetic."""
    try:
        pf = pq.ParquetFile(path, read_dictionary=list(DICTIONARY_COLUMNS))
    except Exception:  # missing or unreadable: the full check says which
        return None
    if not _schema_ok(pf, list(SCORE_INPUTS)):
        return None
    ranged = _ranges_from_statistics(pf)
    if ranged is None:
        return None
    # columns only checked are not read where their statistics suffice: p_invalid's range, and
    # a model or decoding column holding one value (min == max)
    values: dict[str, set[str]] = {c: set() for c in DICTIONARY_COLUMNS}
    for c in ("model", "decoding"):
        lo, hi = _stat(pf, c, "min"), _stat(pf, c, "max")
        if lo is not None and lo == hi:
            values[c].add(lo.decode() if isinstance(lo, bytes) else str(lo))
    skip = {c for c in ("model", "decoding") if values[c]} | ({"p_invalid"} & ranged)
    cols = [c for c in SCORE_INPUTS if c not in skip]
    seed_max = max(int(_stat(pf, "seed", "max") or 0), 0) if "seed" in ranged else 2**16 - 1
    state = _Stream(seeds=seed_max + 1, images={}, values=values)
    groups = pf.metadata.num_row_groups

    def read(rg: int) -> pa.Table:
        return pf.read_row_group(rg, columns=cols, use_threads=False)

    # the next row group decodes in a second thread (pyarrow leaves the GIL) while this one
    # is reduced
    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = pool.submit(read, 0) if groups else None
        try:
            for rg in range(groups):
                assert ahead is not None
                group = ahead.result()
                ahead = pool.submit(read, rg + 1) if rg + 1 < groups else None
                if not state.add(group, ranged, last=rg == groups - 1):
                    return None
        except Exception:  # an unreadable row group: the full check says which
            return None
        finally:
            if ahead is not None:
                ahead.cancel()
    v = state.values
    if v["model"] - {model} or not v["decoding"] <= set(DECODINGS):
        return None
    if not v["choice"] <= set(CHOICES) or not state.parts["n"]:
        return None  # no drawn row: the paper estimator's seeded draws (pandas engine)
    cells = {f: np.concatenate(state.parts[f]) for f in _CELL_FIELDS}
    return Cells(images=list(state.images), **cells)


def _schema_ok(pf: pq.ParquetFile, cols: list[str]) -> bool:
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
        if name in _NULLABLE_INPUTS or name in cols:
            continue
        for rg in range(meta.num_row_groups):
            stats = meta.row_group(rg).column(i).statistics
            if stats is None or not stats.has_null_count or stats.null_count:
                return False
    return True


_RANGES = {"scenario_id": (1, 10_000), "ordering": (1, 4), "seed": (0, None),
           "p_pos": (0.0, 1.0), "p_neg": (0.0, 1.0), "p_invalid": (0.0, 1.0),
           "p_undecided": (0.0, 1.0)}  # fmt: skip


def _stat(pf: pq.ParquetFile, column: str, which: str) -> float | None:
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


def _ranges_from_statistics(pf: pq.ParquetFile) -> set[str] | None:
    """The ranged columns whose statistics show them in range (``None``: one is out of it)."""
    ok = set()
    for c, (lo, hi) in _RANGES.items():
        lo_v, hi_v = _stat(pf, c, "min"), _stat(pf, c, "max")
        if lo_v is None or hi_v is None:
            continue  # no statistics: checked on the values
        if lo_v < lo or (hi is not None and hi_v > hi):
            return None
        ok.add(c)
    return ok


@dataclass
class _Stream:
    """The state of :func:`reduce_judgments` between row groups."""

    seeds: int  # seeds lie in 0..seeds-1 (the sort key's last digit)
    images: dict[str, int]  # image -> code, in order of first appearance
    values: dict[str, set[str]]  # the values seen in each dictionary column
    parts: dict[str, list[np.ndarray]] = field(
        default_factory=lambda: {f: [] for f in _CELL_FIELDS}
    )
    carry: dict[str, np.ndarray] | None = None  # the rows of a cell cut by a row group's end

    def add(self, group: pa.Table, ranged: set[str], *, last: bool) -> bool:
        """Check and reduce one row group; ``False`` where the engine declines the table."""
        block = _block(group, ranged, self.images, self.values)
        if block is None or int(block["seed"].max(initial=0)) >= self.seeds:
            return False
        if len(self.images) * 10_001 * 5 * self.seeds >= 2**62:
            return False  # the sort key would overflow: the whole-table path
        cell = block["image_id"].astype(np.int64) * 10_001 + block["scenario_id"]
        key = (cell * 5 + block["ordering"]) * self.seeds + block["seed"]
        carry = self.carry
        if carry is not None and len(key) and not carry["key"][-1] < key[0]:
            return False  # not sorted across the row groups' boundary
        if len(key) >= 2 and not bool(np.all(key[1:] > key[:-1])):
            return False  # not sorted by (image, scenario, ordering, seed), or a key twice
        block["key"], block["cell"] = key, cell
        if carry is not None:  # the carried cell's rows continue at the start of this block
            k = int(np.searchsorted(cell, carry["cell"][-1], side="right"))
            if k:
                carry = {c: np.concatenate([carry[c], block[c][:k]]) for c in carry}
                block = {c: v[k:] for c, v in block.items()}
            if len(block["key"]) or last:
                if not _reduce_rows(carry, self.parts):
                    return False
                carry = None
        self.carry = carry
        if len(block["key"]):
            starts = np.flatnonzero(np.r_[True, block["cell"][1:] != block["cell"][:-1]])
            cut = len(block["key"]) if last else int(starts[-1])
            if not last:
                self.carry = {c: v[cut:] for c, v in block.items()}
            if cut:
                return _reduce_rows({c: v[:cut] for c, v in block.items()}, self.parts)
        return True


def _block(
    group: pa.Table, ranged: set[str], images: dict[str, int], values: dict[str, set[str]]
) -> dict[str, np.ndarray] | None:
    """One row group's columns as numpy (``image_id`` as codes into ``images``, which grows;
    ``choice`` as its index in :data:`CHOICES`, 3 another value, -1 null; the values of the
    other dictionary columns only collected), or ``None`` on a null or a value out of range."""
    out: dict[str, np.ndarray] = {}
    for c in group.column_names:
        col = _one(group.column(c))
        if col.null_count and c not in _NULLABLE_INPUTS:
            return None
        if c in values:
            seen = col.dictionary.to_pylist()
            values[c].update(seen)
            if c == "image_id":
                lut = [images.setdefault(v, len(images)) for v in seen]
            elif c == "choice":
                lut = [CHOICES.index(v) if v in CHOICES else 3 for v in seen]
            else:
                continue
            out[c] = np.array([*lut, -1], dtype=np.int32)[_np(col.indices, fill=-1)]
            continue
        out[c] = _np(col)
        if c in _RANGES and c not in ranged and len(out[c]):
            lo, hi = _RANGES[c]
            v = out[c]
            lo_v, hi_v = np.fmin.reduce(v), np.fmax.reduce(v)  # NaN aside
            if not (np.isnan(lo_v) or (lo_v >= lo and (hi is None or hi_v <= hi))):
                return None
    return out


def _reduce_rows(rows: dict[str, np.ndarray], parts: dict[str, list[np.ndarray]]) -> bool:
    """Reduce whole cells of sorted rows into ``parts``: the drawn rows (seed >= 1; the exact
    rows of a ``sampled`` run are left out), or ``False`` where a mass is NaN."""
    drawn = rows["seed"] > 0
    if not drawn.all():
        rows = {c: v[drawn] for c, v in rows.items()}
    cell = rows["cell"]
    if not len(cell):
        return True
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    p_und = rows["p_undecided"]
    p_pos = rows["p_pos"]
    p_valid = p_pos + rows["p_neg"]
    if np.isnan(p_und).any() or np.isnan(p_valid).any():
        return False  # NaN masses: pandas' grouped kernels (NaN-skipping)
    choice = rows["choice"]
    # the pandas engine's run-wise reductions (grouping.Groups): int64 counts, float sums
    parts["image"].append(rows["image_id"][starts])
    parts["scenario"].append(rows["scenario_id"][starts])
    parts["n"].append(np.diff(starts, append=len(choice)).astype(np.int64))
    parts["pos"].append(np.add.reduceat(choice == 0, starts, dtype=np.int64))
    parts["valid"].append(np.add.reduceat((choice == 0) | (choice == 1), starts, dtype=np.int64))
    parts["simulated"].append(np.logical_or.reduceat(rows["simulated"], starts))
    parts["undecided_sum"].append(np.add.reduceat(p_und, starts))
    parts["p_pos_sum"].append(np.add.reduceat(p_pos, starts))
    parts["p_valid_sum"].append(np.add.reduceat(p_valid, starts))
    return True


def score_partition(
    cells: Cells,
    faces: pa.Table,
    variations: pa.Table,
    benchmark: Benchmark,
    *,
    undecided_warn: float = 0.01,
    undecided_max: float = 0.05,
) -> pa.Table | None:
    """One model's score partition (the file's columns: :data:`PARTITION_COLUMNS`) from its
    cells (:func:`reduce_judgments`) and the dataset tables, or ``None`` where this engine does
    not apply (see the module docstring): the caller then scores with the pandas engine.
    Unknown images or scenarios raise :class:`StylisticBiasError`."""
    meta = _dataset(faces, variations)
    if meta is None:
        return None
    img, cell_sid, n_cell = cells.image, cells.scenario, cells.n
    undecided = cells.undecided_sum / n_cell
    phi = _ratio(cells.pos.astype(np.float64), cells.valid.astype(np.float64))
    n_valid = cells.valid.astype(np.float64)
    simulated = cells.simulated
    # a drawn response that landed in undecided mass was recorded as invalid: n * u draws
    und = n_cell * undecided
    cap = n_cell - n_valid
    und = np.where((und <= cap) | np.isnan(und), und, cap)
    phi_low, phi_high = phi_bounds(cells.pos, n_valid, und)
    phi_exact = np.clip(_ratio(cells.p_pos_sum, cells.p_valid_sum), 0.0, 1.0)
    excluded = undecided_excluded(undecided, undecided_warn, undecided_max)
    phis = {"phi": phi, "phi_low": phi_low, "phi_high": phi_high, "phi_paper": phi.copy(),
            "phi_exact": phi_exact}  # fmt: skip
    for v in phis.values():
        v[excluded] = np.nan

    images = _string_array(cells.images)
    cell_images = images.take(_arrow(img))
    row = _np(pc.index_in(cell_images, value_set=meta.column("image_id")), fill=-1)
    row = row.astype(np.int64)
    if (row < 0).any():
        unknown = sorted(set(cell_images.filter(_arrow(row < 0)).to_pylist()))
        raise StylisticBiasError(
            f"judgments: {len(unknown)} image_id(s) not in faces/variations tables, e.g. "
            + ", ".join(unknown[:5])
        )
    cat = {s.id: s.category for s in benchmark.scenarios}
    # the scenario ids present (1..10000: checked), without np.unique (it imports numpy.ma)
    bad = sorted(set(np.flatnonzero(np.bincount(cell_sid)).tolist()) - set(cat))
    if bad:
        raise StylisticBiasError(f"judgments: unknown scenario_id(s) {bad}; valid: {sorted(cat)}")

    is_base = _np(meta.column("is_base"))[row]
    face = pc.dictionary_encode(meta.column("face_id")).combine_chunks()
    face_code = _np(face.indices).astype(np.int64)[row]
    ids = sorted(cat)
    spos = np.searchsorted(ids, cell_sid)
    base_of = np.full((len(face.dictionary), len(ids)), -1, dtype=np.int64)
    base_cells = np.flatnonzero(is_base)
    base_of[face_code[base_cells], spos[base_cells]] = base_cells
    b = base_of[face_code, spos]
    has_base = (b >= 0) & ~is_base

    def shift(value: np.ndarray, base_value: np.ndarray) -> np.ndarray:
        out = np.full(len(value), np.nan)
        out[has_base] = value[has_base] - base_value[b[has_base]]
        return out

    deltas = {
        "delta": shift(phis["phi"], phis["phi"]),
        "delta_low": shift(phis["phi_low"], phis["phi_high"]),
        "delta_high": shift(phis["phi_high"], phis["phi_low"]),
        "delta_paper": shift(phis["phi_paper"], phis["phi_paper"]),
        "delta_exact": shift(phis["phi_exact"], phis["phi_exact"]),
    }
    # rows sorted by (image_id, scenario_id): the images' string order, then the scenario
    rank = np.empty(len(images), dtype=np.int64)
    rank[_np(pc.sort_indices(images))] = np.arange(len(images))
    order = np.lexsort((cell_sid, rank[img]))
    take = _arrow(row[order])
    cat_names = _string_array([cat[i] for i in ids])
    values: dict[str, pa.Array] = {
        "image_id": _strings(cell_images.take(_arrow(order))),
        "face_id": meta.column("face_id").take(take),
        "is_base": _arrow(is_base[order]),
        **{c: meta.column(c).take(take) for c in ("category", "attribute", "value")},
        **{a: meta.column(a).take(take) for a in DEMOGRAPHIC_AXES},
        "scenario_id": _arrow(cell_sid[order]),
        "scenario_category": cat_names.take(_arrow(spos[order])),
        "n_valid": _arrow(n_valid[order]),
        "n": _arrow(n_cell[order]),
        "simulated": _arrow(simulated[order]),
        "undecided": _arrow(undecided[order]),
        "undecided_excluded": _arrow(excluded[order]),
    }
    for name, v in {**phis, **deltas}.items():
        values[name] = _arrow(v[order])  # NaN -> null, as from a DataFrame
    arrays = []
    for c in PARTITION_COLUMNS:
        v = values[c.name]
        arrays.append(_one(v).cast(c.type))
    schema = pa.schema([pa.field(c.name, c.type) for c in PARTITION_COLUMNS],
                       metadata={b"pandas": pandas_metadata()})  # fmt: skip
    return pa.Table.from_arrays(arrays, schema=schema)


def read_dataset_tables(faces: Path, variations: Path) -> tuple[pa.Table, pa.Table] | None:
    """The faces and variations tables' columns the scores use, or ``None`` when either file
    cannot be read that way (the pandas engine's schema check then names the problem)."""
    demo = list(DEMOGRAPHIC_AXES)
    try:
        f = pq.ParquetFile(faces).read(columns=["image_id", "face_id", *demo])
        v = pq.ParquetFile(variations).read(
            columns=["image_id", "face_id", "category", "attribute", "value", *demo]
        )
    except Exception:  # missing, unreadable, a column missing
        return None
    return f, v


def demographics_ok(table: pa.Table, demographics: Mapping[str, Sequence[str]]) -> bool:
    """Whether every age/gender/ethnicity/body type of ``table`` is a benchmark value."""
    for col, valid in demographics.items():
        if col in table.column_names:
            values = set(pc.unique(_strings(table.column(col))).to_pylist())
            if not values <= {str(x) for x in valid}:
                return False
    return True
