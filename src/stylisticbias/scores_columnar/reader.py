"""One model's judgments reduced per (image, scenario) cell, one Parquet row group at a time.

The reductions are the pandas engine's run-wise ones (``np.add.reduceat`` over each cell's run
of rows, int64 counts, float sums), so every float is the same to the last bit.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from stylisticbias.scores_columnar.arrays import as_numpy, one_chunk
from stylisticbias.scores_columnar.checks import (
    CHOICES,
    DECODINGS,
    DICTIONARY_COLUMNS,
    NULLABLE_INPUTS,
    RANGES,
    SCORE_INPUTS,
    constant,
    ranges_from_statistics,
    schema_ok,
    statistic,
)


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


_CELL_FIELDS = (
    "image",
    "scenario",
    "n",
    "pos",
    "valid",
    "simulated",
    "undecided_sum",
    "p_pos_sum",
    "p_valid_sum",
)


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
    if not schema_ok(pf, list(SCORE_INPUTS)):
        return None
    ranged = ranges_from_statistics(pf)
    if ranged is None:
        return None
    # columns only checked are not read where their statistics suffice: p_invalid's range, a
    # model or decoding column holding one value, and a ``simulated`` flag the same on every row
    values: dict[str, set[str]] = {c: set() for c in DICTIONARY_COLUMNS}
    for c in ("model", "decoding"):
        one = constant(pf, c)
        if one is not None:
            values[c].add(one.decode() if isinstance(one, bytes) else str(one))
    simulated = constant(pf, "simulated")
    skip = {c for c in ("model", "decoding") if values[c]} | ({"p_invalid"} & ranged)
    skip |= {"simulated"} if isinstance(simulated, bool) else set()
    cols = [c for c in SCORE_INPUTS if c not in skip]
    seed_max = max(int(statistic(pf, "seed", "max") or 0), 0) if "seed" in ranged else 2**16 - 1
    state = _Stream(
        seeds=seed_max + 1,
        images={},
        values=values,
        simulated=simulated if isinstance(simulated, bool) else None,
    )
    groups = pf.metadata.num_row_groups

    try:
        for rg, group in enumerate(read_ahead(path, cols, groups)):
            if not state.add(group, ranged, last=rg == groups - 1):
                return None
    except Exception:  # an unreadable row group: the full check says which
        return None
    v = state.values
    if v["model"] - {model} or not v["decoding"] <= set(DECODINGS):
        return None
    if not v["choice"] <= set(CHOICES) or not state.parts["n"]:
        return None  # no drawn row: the paper estimator's seeded draws (pandas engine)
    cells = {f: np.concatenate(state.parts[f]) for f in _CELL_FIELDS}
    return Cells(images=list(state.images), **cells)


#: row groups decoding ahead of the one being reduced. One: on two cores, with the stage's main
#: thread importing and parsing its configuration meanwhile, a second decoder measured slower
#: (more memory touched) than one
READ_AHEAD = 1


def read_ahead(
    path: str | Path, columns: list[str], groups: int, depth: int = READ_AHEAD
) -> Iterator[pa.Table]:
    """The ``columns`` of a Parquet file's row groups, in order, each decoded in a worker thread
    (one file reader per thread; pyarrow leaves the GIL while it decodes) up to ``depth`` ahead
    of the one handed out: the decoding of the next row groups overlaps the reduction of this
    one. A row group's columns decode on Arrow's thread pool (on two cores, alternated with the
    single-threaded decoding, the stage measured a few per cent faster)."""
    local = threading.local()

    def read(rg: int) -> pa.Table:
        pf = getattr(local, "file", None)
        if pf is None:
            pf = local.file = pq.ParquetFile(path, read_dictionary=list(DICTIONARY_COLUMNS))
        return pf.read_row_group(rg, columns=columns, use_threads=True)

    depth = max(1, depth)
    with ThreadPoolExecutor(max_workers=depth) as pool:
        pending = deque(pool.submit(read, rg) for rg in range(min(depth, groups)))
        following = len(pending)
        try:
            while pending:
                group = pending.popleft().result()
                if following < groups:
                    pending.append(pool.submit(read, following))
                    following += 1
                yield group
        finally:
            for future in pending:
                future.cancel()


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
    simulated: bool | None = None  # every row's ``simulated`` (not read), where it is one value

    def add(self, group: pa.Table, ranged: set[str], *, last: bool) -> bool:
        """Check and reduce one row group; ``False`` where the engine declines the table."""
        block = _block(group, ranged, self.images, self.values)
        if block is None or int(block["seed"].max(initial=0)) >= self.seeds:
            return False
        if len(self.images) * 10_001 * 5 * self.seeds >= 2**62:
            return False  # the sort key would overflow: the whole-table path
        cell = block["image_id"].astype(np.int64)
        cell *= 10_001
        cell += block["scenario_id"]
        key = cell * 5
        key += block["ordering"]
        key *= self.seeds
        key += block["seed"]
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
                if not _reduce_rows(carry, self.parts, self.simulated):
                    return False
                carry = None
        self.carry = carry
        if len(block["key"]):
            starts = run_starts(block["cell"])
            cut = len(block["key"]) if last else int(starts[-1])
            if not last:
                self.carry = {c: v[cut:] for c, v in block.items()}
                starts = starts[:-1]
            if cut:
                rows = {c: v[:cut] for c, v in block.items()}
                return _reduce_rows(rows, self.parts, self.simulated, starts)
        return True


def run_starts(values: np.ndarray) -> np.ndarray:
    """The index of each run's first element in ``values`` (equal neighbours: one run)."""
    change = np.flatnonzero(values[1:] != values[:-1])
    out = np.empty(len(change) + 1, dtype=np.int64)
    out[0] = 0
    np.add(change, 1, out=out[1:])
    return out


def _block(
    group: pa.Table, ranged: set[str], images: dict[str, int], values: dict[str, set[str]]
) -> dict[str, np.ndarray] | None:
    """One row group's columns as numpy (``image_id`` as codes into ``images``, which grows;
    ``choice`` as its index in :data:`CHOICES`, 3 another value, -1 null; the values of the
    other dictionary columns only collected), or ``None`` on a null or a value out of range."""
    out: dict[str, np.ndarray] = {}
    for c in group.column_names:
        col = one_chunk(group.column(c))
        if col.null_count and c not in NULLABLE_INPUTS:
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
            out[c] = np.array([*lut, -1], dtype=np.int32)[as_numpy(col.indices, fill=-1)]
            continue
        out[c] = as_numpy(col)
        if c in RANGES and c not in ranged and len(out[c]):
            lo, hi = RANGES[c]
            v = out[c]
            lo_v, hi_v = np.fmin.reduce(v), np.fmax.reduce(v)  # NaN aside
            if not (np.isnan(lo_v) or (lo_v >= lo and (hi is None or hi_v <= hi))):
                return None
    return out


def _reduce_rows(
    rows: dict[str, np.ndarray],
    parts: dict[str, list[np.ndarray]],
    simulated: bool | None,
    starts: np.ndarray | None = None,
) -> bool:
    """Reduce whole cells of sorted rows into ``parts``: the drawn rows (seed >= 1; the exact
    rows of a ``sampled`` run are left out), or ``False`` where a mass is NaN. ``starts``: the
    cells' first rows, where known; ``simulated``: every row's flag where it was not read."""
    drawn = rows["seed"] > 0
    if not drawn.all():
        rows = {c: v[drawn] for c, v in rows.items()}
        starts = None
    cell = rows["cell"]
    if not len(cell):
        return True
    if starts is None:
        starts = run_starts(cell)
    p_pos = rows["p_pos"]
    p_valid = p_pos + rows["p_neg"]
    choice = rows["choice"]
    # the pandas engine's run-wise reductions (grouping.Groups): int64 counts, float sums
    undecided_sum = np.add.reduceat(rows["p_undecided"], starts)
    p_valid_sum = np.add.reduceat(p_valid, starts)
    # a NaN mass makes its cell's sum NaN (the masses are checked to lie in [0, 1] otherwise)
    if np.isnan(undecided_sum).any() or np.isnan(p_valid_sum).any():
        return False  # NaN masses: pandas' grouped kernels (NaN-skipping)
    positive = choice == 0
    parts["image"].append(rows["image_id"][starts])
    parts["scenario"].append(rows["scenario_id"][starts])
    parts["n"].append(np.diff(starts, append=len(choice)).astype(np.int64))
    parts["pos"].append(np.add.reduceat(positive, starts, dtype=np.int64))
    # positive (0) or negative (1); invalid (2), another value (3) and null (-1) are not
    parts["valid"].append(np.add.reduceat(choice.view(np.uint32) <= 1, starts, dtype=np.int64))
    if simulated is None:
        parts["simulated"].append(np.logical_or.reduceat(rows["simulated"], starts))
    else:
        parts["simulated"].append(np.full(len(starts), simulated))
    parts["undecided_sum"].append(undecided_sum)
    parts["p_pos_sum"].append(np.add.reduceat(p_pos, starts))
    parts["p_valid_sum"].append(p_valid_sum)
    return True
