"""The score partition: its schema, phi / delta / bounds from the reduced cells, the dataset join.

:data:`PARTITION_COLUMNS` is the ``SCORES`` schema (``model`` aside: the partition key), kept
equal to the pandera schema by a test; :func:`score_partition` builds the table the stage writes
and :func:`write_partition` writes it with the same bytes (schema, pandas metadata, row order)
as the pandas engine's file.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from stylisticbias.benchmark import DEMOGRAPHIC_AXES
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks.bounds import phi_bounds
from stylisticbias.scores_columnar.arrays import (
    as_numpy,
    as_strings,
    cast,
    compute,
    one_chunk,
    string_array,
    to_arrow,
)
from stylisticbias.scores_columnar.encoding import string_column, write_table
from stylisticbias.scores_columnar.images import IMAGE_COLUMNS, ImageTable, image_table, row_order
from stylisticbias.scores_columnar.reader import Cells, run_starts

if TYPE_CHECKING:
    from stylisticbias.benchmark import Benchmark

log = logging.getLogger(__name__)


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

#: a string column may be held dictionary-encoded (see :func:`partition_schema`)
_DICTIONARY = {
    pa.large_string(): pa.dictionary(pa.int32(), pa.large_string()),
    pa.bool_(): None,
    pa.int64(): None,
    pa.float64(): None,
}
#: pandas' name of each Arrow type in the pandas metadata of a file written from a DataFrame
_PANDAS_TYPES = {
    pa.large_string(): ("object", "str"),
    pa.bool_(): ("bool", "bool"),
    pa.int64(): ("int64", "int64"),
    pa.float64(): ("float64", "float64"),
}


def installed_version(package: str) -> str:
    """The installed version of ``package`` from its ``.dist-info`` directory's name, without
    importing it -- or :mod:`importlib.metadata`, which costs the stage more than its arithmetic
    on a small table (it parses e-mail headers); that is the fallback."""
    spec = importlib.util.find_spec(package)
    if spec is not None and spec.origin:
        site = Path(spec.origin).parent.parent
        found = list(site.glob(f"{package}-*.dist-info"))
        if len(found) == 1:
            return found[0].name.removeprefix(f"{package}-").removesuffix(".dist-info")
    from importlib import metadata

    return metadata.version(package)


def pandas_metadata(columns: Sequence[ScoreColumn] = PARTITION_COLUMNS) -> bytes:
    """The ``pandas`` schema metadata pyarrow writes for a DataFrame of these columns (pandas'
    default dtypes: ``str``, ``bool``, ``int64``, ``float64``; no index), built without pandas,
    so that a file written here reads back into the same DataFrame -- and is the same bytes."""
    cols = [
        {
            "name": c.name,
            "field_name": c.name,
            "pandas_type": _PANDAS_TYPES[c.type][0],
            "numpy_type": _PANDAS_TYPES[c.type][1],
            "metadata": None,
        }
        for c in columns
    ]
    return json.dumps(
        {
            "index_columns": [],
            "column_indexes": [],
            "columns": cols,
            "attributes": {},
            "creator": {"library": "pyarrow", "version": pa.__version__},
            "pandas_version": installed_version("pandas"),
        }
    ).encode("utf8")


def check_scores_table(table: pa.Table) -> bool:
    """Whether ``table`` holds exactly :data:`PARTITION_COLUMNS`: names and types in order, no null
    where none may be, every value in its range and one row per (image, scenario), sorted."""
    if table.schema.names != [c.name for c in PARTITION_COLUMNS]:
        return False
    for c in PARTITION_COLUMNS:
        col = table.column(c.name)
        if col.type not in (c.type, _DICTIONARY[c.type]) or (not c.nullable and col.null_count):
            return False
        if c.low is not None or c.high is not None:
            mm = compute("min_max", col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is None:  # all null
                continue
            if (c.low is not None and lo < c.low) or (c.high is not None and hi > c.high):
                return False
    sid = as_numpy(table.column("scenario_id"))
    ids = table.column("image_id")
    img = compute("not_equal", ids.slice(1), ids.slice(0, max(len(ids) - 1, 0)))
    same_image = ~as_numpy(img)
    return not bool(np.any(same_image & (sid[1:] <= sid[:-1])))


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


def score_partition(
    cells: Cells,
    faces: pa.Table | ImageTable,
    variations: pa.Table | None,
    benchmark: Benchmark,
    *,
    undecided_warn: float = 0.01,
    undecided_max: float = 0.05,
) -> pa.Table | None:
    """One model's score partition (the file's columns: :data:`PARTITION_COLUMNS`) from its
    cells (:func:`reduce_judgments`) and the dataset tables -- or their
    :func:`~stylisticbias.scores_columnar.images.image_table`, built beforehand (then
    ``variations`` is ``None``) -- or ``None`` where this engine does not apply (see the module
    docstring): the caller then scores with the pandas engine. Unknown images or scenarios
    raise :class:`StylisticBiasError`."""
    meta = faces if isinstance(faces, ImageTable) else image_table(faces, variations)
    if meta is None:
        return None
    undecided = cells.undecided_sum / cells.n
    excluded = undecided_excluded(undecided, undecided_warn, undecided_max)
    img = cells.image
    image_row = meta.lookup(cells.images)
    unknown_images = (image_row < 0) & (np.bincount(img, minlength=len(cells.images)) > 0)
    if unknown_images.any():
        unknown = sorted(i for i, bad in zip(cells.images, unknown_images, strict=True) if bad)
        raise StylisticBiasError(
            f"judgments: {len(unknown)} image_id(s) not in faces/variations tables, e.g. "
            + ", ".join(unknown[:5])
        )
    cat = {s.id: s.category for s in benchmark.scenarios}
    # the scenario ids present (1..10000: checked), without np.unique (it imports numpy.ma)
    bad = sorted(set(np.flatnonzero(np.bincount(cells.scenario)).tolist()) - set(cat))
    if bad:
        raise StylisticBiasError(f"judgments: unknown scenario_id(s) {bad}; valid: {sorted(cat)}")

    # the cells in the partition's order (image id, then scenario): every column is computed
    # cell by cell, so the order they are computed in leaves each value's bits as they were
    order = row_order(cells.images, img, cells.scenario)

    def ordered(v: np.ndarray) -> np.ndarray:
        return v if order is None else v[order]

    img, cell_sid = ordered(img), ordered(cells.scenario)
    ids = sorted(cat)
    position = np.zeros(ids[-1] + 1, dtype=np.int64)
    position[ids] = np.arange(len(ids))
    spos = position[cell_sid]  # the scenario's position among the benchmark's

    def strings() -> dict[str, pa.Array]:
        """The string columns: an image's run of cells shares its dataset values."""
        runs = run_starts(img) if len(img) else np.zeros(0, dtype=np.int64)
        run_image = img[runs]
        counts = np.diff(runs, append=len(img))
        run_row = image_row[run_image]
        categories = sorted(set(cat.values()))
        scenario_category = np.array([categories.index(cat[i]) for i in ids], dtype=np.int64)
        return {
            "image_id": string_column(run_image, string_array(cells.images), counts),
            **{
                c: string_column(meta.codes[c][run_row], meta.values[c], counts)
                for c in IMAGE_COLUMNS
            },
            "scenario_category": string_column(scenario_category[spos], string_array(categories)),
        }

    # built in a thread while the numbers are computed here (numpy and Arrow leave the GIL)
    with ThreadPoolExecutor(max_workers=1) as pool:
        string_columns = pool.submit(strings)
        values = _numbers(
            cells, meta, ordered, img, cell_sid, image_row, spos, len(ids), undecided, excluded
        )
        values.update(string_columns.result())
    arrays = []
    for c in PARTITION_COLUMNS:
        v = one_chunk(values[c.name])
        arrays.append(v if v.type in (c.type, _DICTIONARY[c.type]) else cast(v, c.type))
    return pa.Table.from_arrays(arrays, names=[c.name for c in PARTITION_COLUMNS])


def _numbers(
    cells: Cells,
    meta: ImageTable,
    ordered: Callable[[np.ndarray], np.ndarray],
    img: np.ndarray,
    cell_sid: np.ndarray,
    image_row: np.ndarray,
    spos: np.ndarray,
    n_scenarios: int,
    undecided: np.ndarray,
    excluded: np.ndarray,
) -> dict[str, pa.Array]:
    """The partition's numeric and boolean columns: ``cells`` put in the partition's order by
    ``ordered`` (``img``, ``cell_sid``, ``spos``: their images, scenarios and the scenarios'
    positions in that order), ``undecided`` and ``excluded`` per cell in the cells' order."""
    n_cell = ordered(cells.n)
    undecided, excluded = ordered(undecided), ordered(excluded)
    pos, valid = ordered(cells.pos), ordered(cells.valid)
    phi = _ratio(pos.astype(np.float64), valid.astype(np.float64))
    n_valid = valid.astype(np.float64)
    # a drawn response that landed in undecided mass was recorded as invalid: n * u draws
    und = n_cell * undecided
    cap = n_cell - n_valid
    und = np.where((und <= cap) | np.isnan(und), und, cap)
    phi_low, phi_high = phi_bounds(pos, n_valid, und)
    phi_exact = np.clip(_ratio(ordered(cells.p_pos_sum), ordered(cells.p_valid_sum)), 0.0, 1.0)
    phis = {
        "phi": phi,
        "phi_low": phi_low,
        "phi_high": phi_high,
        "phi_paper": phi.copy(),
        "phi_exact": phi_exact,
    }
    for v in phis.values():
        v[excluded] = np.nan

    row = image_row[img]
    is_base = meta.is_base[row]
    face_code = meta.face[row]
    base_of = np.full((meta.faces, n_scenarios), -1, dtype=np.int64)
    base_cells = np.flatnonzero(is_base)
    base_of[face_code[base_cells], spos[base_cells]] = base_cells
    b = base_of[face_code, spos]
    no_base = (b < 0) | is_base
    b[no_base] = 0

    def shift(value: np.ndarray, base_value: np.ndarray) -> np.ndarray:
        out = value - base_value[b]  # each cell's own subtraction: the same bits
        out[no_base] = np.nan
        return out

    deltas = {
        "delta": shift(phis["phi"], phis["phi"]),
        "delta_low": shift(phis["phi_low"], phis["phi_high"]),
        "delta_high": shift(phis["phi_high"], phis["phi_low"]),
        "delta_paper": shift(phis["phi_paper"], phis["phi_paper"]),
        "delta_exact": shift(phis["phi_exact"], phis["phi_exact"]),
    }
    values: dict[str, pa.Array] = {
        "is_base": to_arrow(is_base),
        "scenario_id": to_arrow(cell_sid),
        "n_valid": to_arrow(n_valid),
        "n": to_arrow(n_cell),
        "simulated": to_arrow(ordered(cells.simulated)),
        "undecided": to_arrow(undecided),
        "undecided_excluded": to_arrow(excluded),
    }
    for name, v in {**phis, **deltas}.items():
        values[name] = to_arrow(v)  # NaN -> null, as from a DataFrame
    return values


def partition_schema() -> pa.Schema:
    """The Arrow schema of a score partition's file: :data:`PARTITION_COLUMNS` and the pandas
    metadata (a table from :func:`score_partition` may hold some string columns
    dictionary-encoded: :func:`write_partition` writes it with this schema)."""
    return pa.schema(
        [pa.field(c.name, c.type) for c in PARTITION_COLUMNS],
        metadata={b"pandas": pandas_metadata()},
    )


def write_partition(table: pa.Table, path: Path) -> None:
    """Write a table of :func:`score_partition` to ``path``: the bytes pyarrow writes for it
    with its string columns materialised (:mod:`~stylisticbias.scores_columnar.encoding`)."""
    write_table(table, partition_schema(), path)


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
            values = set(compute("unique", as_strings(table.column(col))).to_pylist())
            if not values <= {str(x) for x in valid}:
                return False
    return True
