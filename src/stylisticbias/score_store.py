"""Score tables on disk: one Hive partition per model, ``<scores>/model=<name>/part-0.parquet``.

The ``model`` column lives in the directory name, not in the file (the Hive convention), so
the same tree is one dataset for pyarrow, DuckDB, Polars, Spark or Dask::

    SELECT model, avg(delta) FROM read_parquet('data/scores/*/*.parquet', hive_partitioning=true)
    GROUP BY model

(docs/storage.md). Readers here always hand back the full ``SCORES`` table, ``model`` included.
One model is read at a time (partition pruning: only its file is opened), which is what keeps
the analysis memory flat in the number of models.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from stylisticbias.errors import StylisticBiasError
from stylisticbias.outputs import atomic_dir

if TYPE_CHECKING:  # pandas and pandera load only where a table is validated
    import pandas as pd

PARTITION_KEY = "model"
FILE_NAME = "part-0.parquet"
#: model names that are safe as Hive partition values without escaping
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def check_model_name(model: str) -> str:
    """``model`` if it is usable as a partition value; else one clear error."""
    if not _SAFE.match(model):
        raise StylisticBiasError(
            f"model name {model!r}: not usable as a score partition (model=<name>/); use letters, "
            "digits and . _ + - only, starting with a letter or digit"
        )
    return model


def partition_dir(score_dir: str | Path, model: str) -> Path:
    """``<score_dir>/model=<model>``: the directory holding one model's scores."""
    return Path(score_dir) / f"{PARTITION_KEY}={check_model_name(model)}"


def scores_file(score_dir: str | Path, model: str) -> Path:
    """The Parquet file of one model's scores."""
    return partition_dir(score_dir, model) / FILE_NAME


def write_model_scores(df: pd.DataFrame, score_dir: str | Path, model: str) -> Path:
    """Validate one model's ``SCORES`` rows and write its partition atomically.

    Rows of another model are an error. The partition directory is replaced as a whole (a new
    directory is written beside it and renamed), so a reader never sees half a table.
    """
    from stylisticbias.schemas import SCORES, validate

    out = validate(df, SCORES, scores_file(score_dir, model))
    others = sorted(set(map(str, out["model"].unique())) - {model})
    if others:
        raise StylisticBiasError(f"scores of {model!r}: hold rows of other model(s) {others}")
    final = partition_dir(score_dir, model)
    table = pa.Table.from_pandas(out.drop(columns=[PARTITION_KEY]), preserve_index=False)
    with atomic_dir(final) as tmp:
        pq.write_table(table, tmp / FILE_NAME)
    return final / FILE_NAME


def _missing(score_dir: Path, model: str) -> StylisticBiasError:
    legacy = score_dir / f"{model}.parquet"
    if legacy.exists():
        return StylisticBiasError(
            f"{legacy}: a score table in the old one-file layout; scores now live in "
            f"{partition_dir(score_dir, model)}/ -- re-run `dvc repro scores@{model}`"
        )
    return StylisticBiasError(
        f"{scores_file(score_dir, model)}: not found; it is written by the `scores@{model}` stage "
        "(run `dvc repro`)"
    )


def read_model_scores(
    score_dir: str | Path, model: str, columns: list[str] | None = None, *, check: bool = True
) -> pd.DataFrame:
    """One model's scores (``model`` column restored), validated against ``SCORES``.

    ``columns`` reads a projection (then ``check`` only verifies that they exist). A missing
    partition, an unreadable file or a schema mismatch raise :class:`StylisticBiasError` naming
    the file.
    """
    from stylisticbias.schemas import SCORES, validate

    score_dir = Path(score_dir)
    path = scores_file(score_dir, model)
    if not path.exists():
        raise _missing(score_dir, model)
    want = None if columns is None else [c for c in columns if c != PARTITION_KEY]
    try:
        names = pq.read_schema(path).names
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise StylisticBiasError(
            f"{path}: not a readable Parquet file ({type(exc).__name__})"
        ) from None
    required = [c for c, col in SCORES.columns.items() if col.required and c != PARTITION_KEY]
    need = want if want is not None else required if check else []
    missing = [c for c in need if c not in names]
    if missing:
        raise StylisticBiasError(
            f"{path}: does not match the scores schema: missing column(s) {', '.join(missing)}"
        )
    df = pq.read_table(path, columns=want).to_pandas()
    if PARTITION_KEY in df.columns:  # a file written with the column (not by us): must agree
        others = sorted(set(df[PARTITION_KEY].astype(str)) - {model})
        if others:
            raise StylisticBiasError(
                f"{path}: holds rows of model(s) {others}, expected only {model!r}"
            )
        df = df.drop(columns=[PARTITION_KEY])
    df.insert(0, PARTITION_KEY, model)
    if columns is None and check:
        df = validate(df, SCORES, path)
    elif columns is not None:
        df = df[[c for c in columns]]
    return df


def scores_digest(score_dir: str | Path, model: str) -> str:
    """SHA-256 of one model's score file (the key of its cached analysis results)."""
    path = scores_file(score_dir, model)
    if not path.exists():
        raise _missing(Path(score_dir), model)
    return file_digest(path)


def file_digest(path: str | Path) -> str:
    """SHA-256 hex digest of a file's bytes."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
