"""Finished judgment records across configurations: found, kept aside, never deleted.

A judge output ``<out>/`` holds the records of one configuration (``_fingerprint.json``). When
the configuration changes, its records move to the stash ``<out>/../.<name>.stash/<fp>/`` and are
used again if that configuration returns; records of images left out of a run are kept there
too (:func:`stylisticbias.judge.consolidate.consolidate`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.shards import SHARD_GLOB, check_shard, scan_shards
from stylisticbias.outputs import atomic_write_json

log = logging.getLogger(__name__)

FINGERPRINT_FILE = "_fingerprint.json"


def stash_dir(out: Path) -> Path:
    """Where finished records of other configurations are kept: ``<out>/../.<name>.stash/``."""
    return out.parent / f".{out.name}.stash"


def switch_configuration(out: Path, fp: Mapping[str, Any]) -> None:
    """Make ``out`` hold the records of configuration ``fp``; never delete finished records.

    Records of a different configuration (``judgments.parquet`` and shards) are moved to the
    stash under their own fingerprint, the fingerprint file last, so a kill in between is
    finished by the next run.
    """
    path = out / FINGERPRINT_FILE
    shard_dir = out / "shards"
    old: str | None = None
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8")).get("sha256")
        except (OSError, json.JSONDecodeError):
            old = None
    same = {fp["sha256"], *fp.get("aliases", ())}
    if old is not None and old not in same:
        dest = stash_dir(out) / old[:16]
        dest.mkdir(parents=True, exist_ok=True)
        moved = 0
        candidates = [out / "judgments.parquet", *sorted(shard_dir.glob(SHARD_GLOB))]
        for p in candidates:
            if p.exists():
                target = dest / f"{p.stem}-{_file_key(p)}.parquet"
                os.replace(p, target)
                moved += 1
        (out / "failures.json").unlink(missing_ok=True)
        log.warning(
            "configuration changed: %d finished record file(s) of the previous configuration "
            "moved to %s (kept; used again if that configuration returns)",
            moved,
            dest,
        )
    elif old is None and any(shard_dir.glob(SHARD_GLOB)):
        log.warning("%s: shards without a %s; keeping those that validate", out, FINGERPRINT_FILE)
    out.mkdir(parents=True, exist_ok=True)
    if old != fp["sha256"]:
        atomic_write_json(path, fp)


def _file_key(path: Path) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:12]


def stashed_records(out: Path, fp: Mapping[str, Any], model: str) -> dict[Path, pd.DataFrame]:
    """Complete record files kept in the stash for configuration ``fp`` (bad ones skipped)."""
    found: dict[Path, pd.DataFrame] = {}
    dirs = [stash_dir(out) / str(sha)[:16] for sha in (fp["sha256"], *fp.get("aliases", ()))]
    for p in sorted(p for d in dirs if d.exists() for p in d.glob("*.parquet")):
        try:
            found[p] = check_shard(p, model)
        except StylisticBiasError as exc:
            log.warning("stashed records %s unusable (%s); ignored", p, exc)
    return found


def finished_records(out: Path, fp: Mapping[str, Any], model: str) -> dict[Path, pd.DataFrame]:
    """Every finished record file of configuration ``fp``: consolidated, shards, stash."""
    found: dict[Path, pd.DataFrame] = {}
    main = out / "judgments.parquet"
    if main.exists():
        try:
            found[main] = check_shard(main, model)
        except StylisticBiasError as exc:
            log.warning("%s unusable (%s); its images are redone", main, exc)
    found.update(scan_shards(out / "shards", model))
    found.update(stashed_records(out, fp, model))
    return found
