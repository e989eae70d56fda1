"""The ``annotate`` stage of one annotator: resumable, cached, byte-identical on resume.

Output ``<paths.annotations>/<annotator>/``: ``annotations.parquet`` (:data:`~.tables.
ANNOTATIONS`, sorted by image and question), ``_fingerprint.json`` (the annotator spec and a
digest of what is asked) and ``summary.json`` (counts of valid and invalid answers by reason).

While it runs, every finished batch is an atomic Parquet shard in ``shards/`` named by its image
ids only, so a killed run resumes with the images not yet answered and the consolidated table
does not depend on where a run stopped. Records of another configuration (a changed annotator
or question set) are moved to ``<paths.annotations>/.<annotator>.stash/<fingerprint>/``, never
deleted, and used again when that configuration returns. An ``openai`` annotator also keeps
every reply in the response cache, so even a changed batch size asks nothing twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias import schemas
from stylisticbias.annotate.base import Annotator
from stylisticbias.annotate.items import AnnotationItem, items_digest, qa_items
from stylisticbias.annotate.tables import ANNOTATIONS, COLUMNS
from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import config_output, config_path, configured_annotator, project_root
from stylisticbias.output_paths import data_root
from stylisticbias.outputs import OutputLock, atomic_write_json, remove_temp_files
from stylisticbias.spec import Config
from stylisticbias.spec.annotate import (
    AnnotatorSpec,
    HFAnnotatorSpec,
    SimulatedAnnotatorSpec,
)

log = logging.getLogger(__name__)

TABLE = "annotations.parquet"
FINGERPRINT = "_fingerprint.json"
SHARDS = "shards"


def make_annotator(spec: AnnotatorSpec) -> Annotator:
    """The engine of an annotator spec."""
    if isinstance(spec, SimulatedAnnotatorSpec):
        from stylisticbias.annotate.simulated import SimulatedAnnotator

        return SimulatedAnnotator(spec)
    if isinstance(spec, HFAnnotatorSpec):
        from stylisticbias.annotate.hf import HFAnnotator

        return HFAnnotator(spec)
    from stylisticbias.annotate.openai import OpenAIAnnotator

    return OpenAIAnnotator(spec)


def fingerprint(annotator: Annotator, items: Sequence[AnnotationItem]) -> dict[str, Any]:
    """The configuration the records belong to, with its sha256."""
    body = {
        "annotator": annotator.fingerprint(),
        "engine": annotator.engine,
        "items": items_digest(items),
        "schema": schemas.SCHEMA_VERSION,
    }
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
    return {**body, "sha256": digest}


def shard_name(image_ids: Sequence[str]) -> str:
    """``shard-<key>.parquet``, the key a hash of the sorted image ids (content only)."""
    return (
        f"shard-{hashlib.sha1(chr(10).join(sorted(image_ids)).encode()).hexdigest()[:12]}.parquet"
    )


def _stash(out: Path) -> Path:
    return out.parent / f".{out.name}.stash"


def _read(path: Path, name: str) -> pd.DataFrame | None:
    """A record file of annotator ``name`` if it is complete and valid, else None (logged)."""
    try:
        df = schemas.validate(pd.read_parquet(path), ANNOTATIONS, path)
    except Exception as exc:  # unreadable or invalid: redone
        log.warning("%s unusable (%s); its images are asked again", path.name, exc)
        return None
    if not df.empty and set(df["annotator"]) != {name}:
        log.warning("%s holds another annotator's records; ignored", path.name)
        return None
    return df


def switch_configuration(out: Path, fp: Mapping[str, Any]) -> None:
    """Make ``out`` hold configuration ``fp``: other records go to the stash (never deleted)."""
    path = out / FINGERPRINT
    old = None
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8")).get("sha256")
        except (OSError, json.JSONDecodeError):
            old = None
    if old is not None and old != fp["sha256"]:
        dest = _stash(out) / str(old)[:16]
        dest.mkdir(parents=True, exist_ok=True)
        for p in [out / TABLE, *sorted((out / SHARDS).glob("shard-*.parquet"))]:
            if p.exists():
                os.replace(p, dest / p.name)
        log.warning("annotator configuration changed: earlier records kept in %s", dest)
    out.mkdir(parents=True, exist_ok=True)
    if old != fp["sha256"]:
        atomic_write_json(path, fp)


def finished(out: Path, fp: Mapping[str, Any], name: str) -> list[pd.DataFrame]:
    """Every usable record file of configuration ``fp``: the table, shards, the stash."""
    files = [out / TABLE]
    shard_dir = out / SHARDS
    if shard_dir.exists():
        remove_temp_files(shard_dir)
        files += sorted(shard_dir.glob("shard-*.parquet"))
    stash = _stash(out) / str(fp["sha256"])[:16]
    if stash.exists():
        files += sorted(stash.glob("*.parquet"))
    frames = []
    for p in files:
        if p.exists():
            df = _read(p, name)
            if df is None and p.parent == shard_dir:
                p.unlink(missing_ok=True)
            elif df is not None:
                frames.append(df)
    return frames


def annotate_items(
    annotator: Annotator, items: Sequence[AnnotationItem], out: Path, batch_size: int
) -> pd.DataFrame:
    """Answer every item not yet answered under ``out`` and return the consolidated table."""
    fp = fingerprint(annotator, items)
    switch_configuration(out, fp)
    have: dict[str, pd.DataFrame] = {}
    for df in finished(out, fp, annotator.name):
        for image_id, rows in df.groupby("image_id", sort=False):
            have.setdefault(str(image_id), rows)
    todo = [it for it in items if it.image_id not in have]
    log.info(
        "annotate %s: %d images, %d answered before, %d to ask",
        annotator.name,
        len(items),
        len(items) - len(todo),
        len(todo),
    )
    shard_dir = out / SHARDS
    shard_dir.mkdir(parents=True, exist_ok=True)
    for i in range(0, len(todo), batch_size):
        batch = todo[i : i + batch_size]
        rows = pd.DataFrame(annotator.annotate(batch), columns=COLUMNS)
        path = shard_dir / shard_name([it.image_id for it in batch])
        schemas.write_table(rows, path, ANNOTATIONS)
        for image_id, part in rows.groupby("image_id", sort=False):
            have[str(image_id)] = part
    wanted = [it.image_id for it in items]
    frames = [have[i] for i in wanted if i in have]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    table = table[COLUMNS].sort_values(["image_id", "question_id"], kind="stable")
    table = schemas.validate(table.reset_index(drop=True), ANNOTATIONS, out / TABLE)
    schemas.write_table(table, out / TABLE, ANNOTATIONS)
    atomic_write_json(out / "summary.json", summary(table))
    for p in shard_dir.glob("shard-*.parquet"):
        p.unlink()
    shard_dir.rmdir()
    return table


def summary(table: pd.DataFrame) -> dict[str, Any]:
    """Answers per question: valid, and invalid by reason."""
    out: dict[str, Any] = {}
    for qid, rows in table.groupby("question_id", sort=True):
        reasons = rows.loc[~rows["valid"], "reason"].str.split(":").str[0].value_counts()
        out[str(qid)] = {
            "asked": len(rows),
            "valid": int(rows["valid"].sum()),
            "invalid": {str(k): int(v) for k, v in sorted(reasons.items())},
        }
    return out


def run_annotation(config: Config, name: str) -> Path:
    """The ``annotate@<name>`` stage: the QA questions about every rendered variation."""
    spec = configured_annotator(config, name)
    settings = config.annotate
    root = project_root()
    out = config_output(config, "annotations") / name
    data = data_root(root, config.paths.data)
    faces_dir, var_dir = config_path(config, "faces"), config_path(config, "variations")
    faces = schemas.read_table(faces_dir / "faces.parquet", schemas.FACES)
    variations = schemas.read_table(var_dir / "variations.parquet", schemas.VARIATIONS)
    items = qa_items(
        faces,
        variations,
        faces_dir,
        var_dir,
        load_benchmark(config.protocol),
        list(settings.questions),
        data,
    )
    annotator = make_annotator(spec)
    try:
        with OutputLock(root, out):
            table = annotate_items(annotator, items, out, int(settings.batch_size))
    finally:
        annotator.close()
    n_bad = int((~table["valid"]).sum())
    log.info(
        "annotate %s: %d answers, %d invalid (kept with their reason)", name, len(table), n_bad
    )
    return out / TABLE
