"""Arrow <-> numpy without pandas: the conversions of the scores stage's columnar engine.

pyarrow's own ``to_numpy`` and ``pa.array`` on numpy arrays import pandas (a second of the
stage); these build the buffers directly, without a copy where the layout allows it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

try:  # the compute kernels without the pyarrow.compute module: it wraps ~280 kernels in Python
    from pyarrow._compute import CastOptions, call_function  # functions at import (~40 ms of
except ImportError:  # pragma: no cover -- a pyarrow without the private module   the stage)
    from pyarrow.compute import CastOptions, call_function


def compute(kernel: str, *args: pa.Array | pa.ChunkedArray) -> pa.Array | pa.Scalar:
    """Arrow compute kernel ``kernel`` (``pyarrow.compute``'s name: ``"unique"``, ``"min_max"``,
    ...) on ``args``, with default options, without importing ``pyarrow.compute``."""
    return call_function(kernel, list(args))


def cast(arr: pa.Array | pa.ChunkedArray, to: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """``arr.cast(to)``, a safe cast, without importing ``pyarrow.compute`` (``cast`` does)."""
    return call_function("cast", [arr], CastOptions.safe(to))


def one_chunk(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One array (a one-chunk column's chunk: ``combine_chunks`` would copy it)."""
    if isinstance(col, pa.Array):
        return col
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


NUMPY_TYPES = {"double": "float64", "float": "float32", "halffloat": "float16"}


#: Arrow types of the numpy dtypes the engine hands to Arrow
ARROW_TYPES = {"|b1": pa.bool_(), "<i4": pa.int32(), "<i8": pa.int64(), "<f8": pa.float64()}


def to_arrow(values: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
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
    typ = ARROW_TYPES[v.dtype.str]
    return pa.Array.from_buffers(typ, len(v), [validity, pa.py_buffer(v)], null_count=nulls)


def string_array(values: Sequence[str]) -> pa.Array:
    """Strings as a ``large_string`` array (not ``pa.array``, which imports pandas)."""
    data = [v.encode("utf8") for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.large_string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    )


def as_numpy(col: pa.ChunkedArray | pa.Array, fill: int | None = None) -> np.ndarray:
    """A numeric or boolean Arrow column as a numpy array (no copy where it can), nulls replaced
    by ``fill``. Read from the buffers: pyarrow's ``to_numpy`` imports pandas (a second of the
    stage), and so does its ``fill_null`` (it makes a scalar of the fill value)."""
    arr = one_chunk(col)
    n, offset = len(arr), arr.offset
    if arr.null_count and fill is None:
        raise ValueError(f"{arr.type} array with {arr.null_count} null(s) and no fill value")
    data = arr.buffers()[1]
    if pa.types.is_boolean(arr.type):
        values = _bits(data, offset, n)
    else:
        dtype = np.dtype(NUMPY_TYPES.get(str(arr.type), str(arr.type)))
        values = np.frombuffer(data, dtype=dtype)[offset : offset + n]
    if not arr.null_count:
        return values
    return np.where(_bits(arr.buffers()[0], offset, n), values, values.dtype.type(fill))


def _bits(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """``n`` bits of an Arrow bitmap from bit ``offset`` on, as booleans."""
    bits = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), count=offset + n, bitorder="little")
    return bits[offset:].view(np.bool_)


def column_codes(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Integer codes of a key column: a dictionary's indices (one dictionary: see
    :func:`read_judgments_table`) or an integer column's values (no copy)."""
    arr = one_chunk(col)
    if pa.types.is_dictionary(arr.type):
        return as_numpy(arr.indices, fill=-1)
    return as_numpy(arr)


def as_strings(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = one_chunk(col)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return cast(arr, pa.large_string())
