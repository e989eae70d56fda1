"""The score partition: its schema, phi / delta / bounds from the reduced cells, the dataset join.

:data:`PARTITION_COLUMNS` is the ``SCORES`` schema (``model`` aside: the partition key), kept
equal to the pandera schema by a test; :func:`score_partition` builds the table the stage writes
with the same bytes (schema, pandas metadata, row order) as the pandas engine's.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from stylisticbias.benchmark import DEMOGRAPHIC_AXES
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks.bounds import phi_bounds
from stylisticbias.scores_columnar.arrays import (
    as_numpy,
    as_strings,
    one_chunk,
    string_array,
    to_arrow,
)
from stylisticbias.scores_columnar.reader import Cells

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

#: pandas' name of each Arrow type in the pandas metadata of a file written from a DataFrame
_PANDAS_TYPES = {pa.large_string(): ("object", "str"), pa.bool_(): ("bool", "bool"),
                 pa.int64(): ("int64", "int64"), pa.float64(): ("float64", "float64")}  # fmt: skip


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
        if col.type != c.type or (not c.nullable and col.null_count):
            return False
        if c.low is not None or c.high is not None:
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if lo is None:  # all null
                continue
            if (c.low is not None and lo < c.low) or (c.high is not None and hi > c.high):
                return False
    sid = as_numpy(table.column("scenario_id"))
    ids = table.column("image_id")
    img = pc.not_equal(ids.slice(1), ids.slice(0, max(len(ids) - 1, 0)))
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
        cols = {c: as_strings(t.column(c)) for c in t.column_names}
        if any(a.null_count for a in cols.values()):
            return None
        if base:
            cols.update(category=none, attribute=none, value=none)
        cols["is_base"] = to_arrow(np.full(t.num_rows, base))
        parts.append(pa.table({c: cols[c] for c in ("image_id", "face_id", "is_base", "category",
                                                    "attribute", "value", *demo)}))  # fmt: skip
    meta = pa.concat_tables(parts).combine_chunks()
    ids = meta.column("image_id")
    if pc.count_distinct(ids).as_py() != meta.num_rows:  # an image in both tables, or twice
        return None
    if pc.count_distinct(as_strings(f.column("face_id"))).as_py() != f.num_rows:
        return None
    return meta


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

    images = string_array(cells.images)
    # each image looked up once (the cells hold codes into ``images``)
    image_row = as_numpy(pc.index_in(images, value_set=meta.column("image_id")), fill=-1)
    image_row = image_row.astype(np.int64)
    unknown_images = (image_row < 0) & (np.bincount(img, minlength=len(images)) > 0)
    if unknown_images.any():
        unknown = sorted(images.filter(to_arrow(unknown_images)).to_pylist())
        raise StylisticBiasError(
            f"judgments: {len(unknown)} image_id(s) not in faces/variations tables, e.g. "
            + ", ".join(unknown[:5])
        )
    row = image_row[img]
    cat = {s.id: s.category for s in benchmark.scenarios}
    # the scenario ids present (1..10000: checked), without np.unique (it imports numpy.ma)
    bad = sorted(set(np.flatnonzero(np.bincount(cell_sid)).tolist()) - set(cat))
    if bad:
        raise StylisticBiasError(f"judgments: unknown scenario_id(s) {bad}; valid: {sorted(cat)}")

    is_base = as_numpy(meta.column("is_base"))[row]
    face = pc.dictionary_encode(meta.column("face_id")).combine_chunks()
    face_code = as_numpy(face.indices).astype(np.int64)[row]
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
    # rows sorted by (image_id, scenario_id): the images' string order, then the scenario --
    # the cells' own order where they already come so (the judge stage writes its rows sorted)
    rank = np.empty(len(images), dtype=np.int64)
    rank[as_numpy(pc.sort_indices(images))] = np.arange(len(images))
    first = rank[img]
    step = first[1:] - first[:-1]
    if bool(np.all((step > 0) | ((step == 0) & (cell_sid[1:] >= cell_sid[:-1])))):
        order = None
        take = to_arrow(row)
    else:
        order = np.lexsort((cell_sid, first))
        take = to_arrow(row[order])

    def ordered(v: np.ndarray) -> pa.Array:
        return to_arrow(v if order is None else v[order])  # NaN -> null, as from a DataFrame

    cat_names = string_array([cat[i] for i in ids])
    values: dict[str, pa.Array] = {
        "image_id": images.take(ordered(img)),
        **gather(meta, ("face_id", "category", "attribute", "value", *DEMOGRAPHIC_AXES), take),
        "is_base": ordered(is_base),
        "scenario_id": ordered(cell_sid),
        "scenario_category": cat_names.take(ordered(spos)),
        "n_valid": ordered(n_valid),
        "n": ordered(n_cell),
        "simulated": ordered(simulated),
        "undecided": ordered(undecided),
        "undecided_excluded": ordered(excluded),
    }
    for name, v in {**phis, **deltas}.items():
        values[name] = ordered(v)
    arrays = []
    for c in PARTITION_COLUMNS:
        v = values[c.name]
        arrays.append(one_chunk(v).cast(c.type))
    schema = pa.schema([pa.field(c.name, c.type) for c in PARTITION_COLUMNS],
                       metadata={b"pandas": pandas_metadata()})  # fmt: skip
    return pa.Table.from_arrays(arrays, schema=schema)


def gather(table: pa.Table, columns: Sequence[str], rows: pa.Array) -> dict[str, pa.Array]:
    """``table``'s ``columns`` at ``rows``, two columns at a time (Arrow's ``take`` leaves the
    GIL: the string columns of a score table are most of the time it takes to build)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        taken = pool.map(lambda c: one_chunk(table.column(c)).take(rows), columns)
        return dict(zip(columns, taken, strict=True))


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
            values = set(pc.unique(as_strings(table.column(col))).to_pylist())
            if not values <= {str(x) for x in valid}:
                return False
    return True
