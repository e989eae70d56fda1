"""One Parquet file written by two threads: each encodes half of the columns, the halves joined.

pyarrow's writer encodes a row group's columns one after the other, on one core (its
``use_threads`` is not exposed). In a Parquet file each column chunk's bytes are its own -- page
headers hold no file offsets -- and only the footer (Thrift compact ``FileMetaData``) says
where each chunk starts. So two single-row-group files, each holding some of the columns,
are written at once (pyarrow leaves the GIL while it encodes), and their chunks are laid out
one after the other under a footer built from theirs: the schema's leaves, the column chunks
with the second file's offsets moved past the first's bytes, the row group's sizes summed, the
key-value metadata of the whole schema. The result is the file one writer would have written
(a test compares the bytes); a footer this code does not know how to join is written by one
writer instead.
"""

from __future__ import annotations

import base64
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

MAGIC = b"PAR1"
# Thrift compact protocol types
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _STRUCT = (
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    12,
)
# FileMetaData / RowGroup / ColumnChunk / ColumnMetaData field ids (parquet.thrift)
_FM_SCHEMA, _FM_ROW_GROUPS, _FM_KEY_VALUE, _FM_COLUMN_ORDERS = 2, 4, 5, 7
_RG_COLUMNS, _RG_TOTAL_BYTES, _RG_TOTAL_COMPRESSED = 1, 2, 6
_CC_META = 3
_SE_NUM_CHILDREN = 5
#: ColumnMetaData's file offsets: data_page_offset, index_page_offset, dictionary_page_offset,
#: bloom_filter_offset
_CM_OFFSETS = frozenset({9, 10, 11, 14})
#: ColumnChunk fields a joined footer cannot carry over as they are (page indexes, encryption)
_CC_UNSUPPORTED = frozenset({4, 5, 6, 7, 8, 9})


class _Unsupported(Exception):
    """A footer with something the join does not handle."""


# --------------------------------------------------------------------------- Thrift compact
class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return out

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind: int) -> Any:
        if kind in (_TRUE, _FALSE):  # a bool field: its value is its type
            return kind == _TRUE
        if kind == _BYTE:
            return self.byte()
        if kind in (_I16, _I32, _I64):
            return self.zigzag()
        if kind == _DOUBLE:
            self.pos += 8
            return self.data[self.pos - 8 : self.pos]
        if kind == _BINARY:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n : self.pos]
        if kind in (_LIST, _SET):
            head = self.byte()
            n, elem = head >> 4, head & 0x0F
            if n == 15:
                n = self.varint()
            if elem in (_TRUE, _FALSE):  # list elements: one byte each
                return (elem, [self.byte() for _ in range(n)])
            return (elem, [self.value(elem) for _ in range(n)])
        if kind == _STRUCT:
            return self.struct()
        raise _Unsupported(f"Thrift type {kind}")

    def struct(self) -> list[list[Any]]:
        fields: list[list[Any]] = []
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, kind = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            last = fid
            fields.append([fid, kind, self.value(kind)])


def _varint(n: int, out: bytearray) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(n: int, out: bytearray) -> None:
    _varint((n << 1) ^ (n >> 63), out)


def _write_value(kind: int, value: Any, out: bytearray) -> None:
    if kind in (_TRUE, _FALSE):
        return
    if kind == _BYTE:
        out.append(value)
    elif kind in (_I16, _I32, _I64):
        _zigzag(value, out)
    elif kind == _DOUBLE:
        out += value
    elif kind == _BINARY:
        _varint(len(value), out)
        out += value
    elif kind in (_LIST, _SET):
        elem, items = value
        if len(items) < 15:
            out.append(len(items) << 4 | elem)
        else:
            out.append(0xF0 | elem)
            _varint(len(items), out)
        for item in items:
            if elem in (_TRUE, _FALSE):
                out.append(item)
            else:
                _write_value(elem, item, out)
    elif kind == _STRUCT:
        _write_struct(value, out)
    else:
        raise _Unsupported(f"Thrift type {kind}")


def _write_struct(fields: list[list[Any]], out: bytearray) -> None:
    last = 0
    for fid, kind, value in fields:
        if kind in (_TRUE, _FALSE):
            kind = _TRUE if value else _FALSE
        if 0 < fid - last <= 15:
            out.append((fid - last) << 4 | kind)
        else:
            out.append(kind)
            _zigzag(fid, out)
        last = fid
        _write_value(kind, value, out)
    out.append(0)


def read_footer(data: bytes) -> tuple[list[list[Any]], int]:
    """A Parquet file's footer (``FileMetaData`` as Thrift fields ``[id, type, value]``) and
    where it starts."""
    size = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - size
    reader = _Reader(data[start : len(data) - 8])
    fields = reader.struct()
    if reader.pos != size or data[:4] != MAGIC or data[-4:] != MAGIC:
        raise _Unsupported("not one Parquet footer")
    return fields, start


def encode_footer(fields: list[list[Any]]) -> bytes:
    """``fields`` (as :func:`read_footer` gives them) in Thrift's compact protocol."""
    out = bytearray()
    _write_struct(fields, out)
    return bytes(out)


# --------------------------------------------------------------------------- the join
def _field(fields: list[list[Any]], fid: int) -> list[Any]:
    for f in fields:
        if f[0] == fid:
            return f
    raise _Unsupported(f"no field {fid}")


def _join(parts: list[tuple[list[list[Any]], int]], metadata: list[list[Any]]) -> bytes:
    """One footer for the column chunks of ``parts`` (each a footer and its file's length of
    chunk bytes) laid out in order, with ``metadata`` as its key-value list."""
    first = [list(f) for f in parts[0][0]]
    schema = [_field(p, _FM_SCHEMA)[2][1] for p, _ in parts]
    root = [list(f) for f in schema[0][0]]
    leaves = [leaf for s in schema for leaf in s[1:]]
    _field(root, _SE_NUM_CHILDREN)[2] = len(leaves)
    _field(first, _FM_SCHEMA)[2] = (_STRUCT, [root, *leaves])
    columns, total, compressed, shift = [], 0, 0, 0
    for footer, chunk_bytes in parts:
        groups = _field(footer, _FM_ROW_GROUPS)[2][1]
        if len(groups) != 1:
            raise _Unsupported("more than one row group")
        group = groups[0]
        for chunk in _field(group, _RG_COLUMNS)[2][1]:
            if any(f[0] in _CC_UNSUPPORTED for f in chunk):
                raise _Unsupported("a page index or encryption")
            meta = [
                [f[0], f[1], f[2] + shift if f[0] in _CM_OFFSETS else f[2]]
                for f in _field(chunk, _CC_META)[2]
            ]
            columns.append([[f[0], f[1], meta if f[0] == _CC_META else f[2]] for f in chunk])
        total += _field(group, _RG_TOTAL_BYTES)[2]
        compressed += _field(group, _RG_TOTAL_COMPRESSED)[2]
        shift += chunk_bytes
    group = [list(f) for f in _field(first, _FM_ROW_GROUPS)[2][1][0]]
    _field(group, _RG_COLUMNS)[2] = (_STRUCT, columns)
    _field(group, _RG_TOTAL_BYTES)[2] = total
    _field(group, _RG_TOTAL_COMPRESSED)[2] = compressed
    _field(first, _FM_ROW_GROUPS)[2] = (_STRUCT, [group])
    orders = [o for p, _ in parts for o in _field(p, _FM_COLUMN_ORDERS)[2][1]]
    _field(first, _FM_COLUMN_ORDERS)[2] = (_STRUCT, orders)
    kv = [f for f in first if f[0] == _FM_KEY_VALUE]
    if kv:
        kv[0][2] = (_STRUCT, metadata)
    else:
        first.append([_FM_KEY_VALUE, _LIST, (_STRUCT, metadata)])
        first.sort(key=lambda f: f[0])
    return encode_footer(first)


def _part(table: pa.Table, **options: Any) -> bytes:
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, store_schema=False, **options) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def write_split(table: pa.Table, schema: pa.Schema, path: Path, **options: Any) -> bool:
    """Write ``table`` to ``path`` as one writer would with ``schema`` as its Arrow schema (its
    metadata, then the schema itself, as the file's key-value metadata), its columns encoded by
    two writers at once; ``False`` (nothing written) where the footers cannot be joined, and for
    tables of one column or no rows (their footers are laid out otherwise)."""
    n = table.num_columns
    if n < 2 or not table.num_rows:
        return False
    halves = [table.select(range(n // 2)), table.select(range(n // 2, n))]
    with ThreadPoolExecutor(max_workers=1) as pool:
        second = pool.submit(_part, halves[1], **options)
        files = [_part(halves[0], **options), second.result()]
    metadata = [
        [[1, _BINARY, bytes(k)], [2, _BINARY, bytes(v)]] for k, v in (schema.metadata or {}).items()
    ]
    metadata.append(
        [
            [1, _BINARY, b"ARROW:schema"],
            [2, _BINARY, base64.b64encode(schema.serialize().to_pybytes())],
        ]
    )
    try:
        footers = [read_footer(f) for f in files]
        footer = _join([(f, start - 4) for f, start in footers], metadata)
    except _Unsupported:
        return False
    with open(path, "wb") as out:
        out.write(MAGIC)
        for data, (_, start) in zip(files, footers, strict=True):
            out.write(memoryview(data)[4:start])
        out.write(footer)
        out.write(struct.pack("<I", len(footer)))
        out.write(MAGIC)
    return True
