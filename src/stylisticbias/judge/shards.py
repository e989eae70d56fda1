"""Judgment shards: atomic Parquet files, one per batch, and how a run finds them again.

A shard holds every record of the images of one batch, so an image is either wholly in one
complete shard or not judged. Its name depends only on its content (``shard-<key>.parquet``,
the key a hash of its image ids), never on the rank, the batch index or where an earlier run was
interrupted; with the sha256 of each image's bytes in the key, a shard about other pixels of
the same image never takes its place. Files are written to a hidden temp name and moved into
place with ``os.replace`` (:mod:`stylisticbias.outputs`); a crash leaves at most a temp file,
which the next run deletes. A shard that is unreadable or fails the ``JUDGMENT_RECORDS``
schema (e.g. a disk that filled up) is deleted and its images are judged again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from stylisticbias.errors import StylisticBiasError
from stylisticbias.outputs import atomic_write_parquet
from stylisticbias.schemas import JUDGMENT_RECORDS, JUDGMENTS, validate

log = logging.getLogger(__name__)

SHARD_GLOB = "shard-*.parquet"
RANK_SUMMARY_GLOB = "_rank*.json"


def content_key(image_ids: Iterable[str]) -> str:
    """A short hash of the sorted image ids of a shard (part of its file name)."""
    h = hashlib.sha1("\n".join(sorted(image_ids)).encode()).hexdigest()
    return h[:12]


def record_keys(df: pd.DataFrame) -> list[str]:
    """``<image_id>@<image_sha256>`` of every image in ``df`` (one per image and bytes)."""
    pairs = df[["image_id", "image_sha256"]].drop_duplicates()
    return [f"{i}@{h}" for i, h in zip(pairs["image_id"], pairs["image_sha256"])]


def shard_name(image_ids: Iterable[str]) -> str:
    """``shard-<key>.parquet``: named by its content only (see the module docstring)."""
    return f"shard-{content_key(image_ids)}.parquet"


def write_shard(df: pd.DataFrame, path: Path) -> Path:
    """Validate ``df`` as JUDGMENT_RECORDS and write it as a Parquet shard atomically."""
    return atomic_write_parquet(validate(df, JUDGMENT_RECORDS, path), path)


def check_shard(path: Path, model: str | None = None) -> pd.DataFrame:
    """Read one shard and check it is complete; raise :class:`StylisticBiasError` if not.

    Complete means: readable Parquet with exactly the JUDGMENT_RECORDS columns, no null ids, one
    model (``model`` if given), and every (image, image bytes) with the same full (scenario x
    ordering x seed) grid of rows. Records written before image hashes were kept (the JUDGMENTS
    columns only) are read with an empty ``image_sha256``: they match no image, so they are kept
    in the stash and their images judged again. (Shards were schema-validated before they were
    written; the consolidated table is validated again in full, so this check stays cheap for
    runs with many shards.)
    """
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise StylisticBiasError(f"{path.name}: unreadable ({type(exc).__name__})") from None
    if sorted(df.columns) == sorted(JUDGMENTS.columns):  # written before image hashes were kept
        df["image_sha256"] = ""
    if sorted(df.columns) != sorted(JUDGMENT_RECORDS.columns):
        raise StylisticBiasError(
            f"{path.name}: columns {list(df.columns)} are not the JUDGMENT_RECORDS columns"
        )
    if df.empty:
        raise StylisticBiasError(f"{path.name}: empty shard")
    key = ["image_id", "image_sha256", "model", "scenario_id", "ordering", "seed"]
    if df[key].isna().any().any():
        raise StylisticBiasError(f"{path.name}: null ids")
    if model is not None and set(df["model"].unique()) != {model}:
        raise StylisticBiasError(
            f"{path.name}: records of another model {sorted(df['model'].unique())}"
        )
    grid = df["scenario_id"].nunique() * df["ordering"].nunique() * df["seed"].nunique()
    counts = df.groupby(["image_id", "image_sha256"], sort=False).size()
    if (counts != grid).any() or df.duplicated(subset=key).any():
        bad = counts[counts != grid].index[0] if (counts != grid).any() else "?"
        raise StylisticBiasError(f"{path.name}: image {bad}: incomplete or duplicated rows")
    return df


def scan_shards(
    shard_dir: Path, model: str | None = None, *, delete_bad: bool = True
) -> dict[Path, pd.DataFrame]:
    """Complete shards in ``shard_dir`` -> their records. Bad shards are logged and deleted.

    Left-over temp files of a killed run are removed as well.
    """
    found: dict[Path, pd.DataFrame] = {}
    if not shard_dir.exists():
        return found
    for tmp in [*shard_dir.glob(".tmp-*"), *shard_dir.glob(".*.tmp")]:
        log.warning("removing unfinished temp file %s", tmp.name)
        tmp.unlink(missing_ok=True)
    for path in sorted(shard_dir.glob(SHARD_GLOB)):
        try:
            df = check_shard(path, model)
        except StylisticBiasError as exc:
            log.warning(
                "corrupt or incomplete shard %s (%s): deleted, its images are redone",
                path.name,
                exc,
            )
            if delete_bad:
                path.unlink(missing_ok=True)
            continue
        found[path] = df
    return found


def concat_shards(shards: Mapping[Path, pd.DataFrame]) -> pd.DataFrame:
    """Concatenate scanned shards in file-name order (an empty JUDGMENT_RECORDS frame if none)."""
    frames = [shards[p] for p in sorted(shards)]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in JUDGMENT_RECORDS.columns})
    return pd.concat(frames, ignore_index=True)
