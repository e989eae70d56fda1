"""Consolidating a judge run: every finished record folded into ``judgments.parquet``.

Records of images outside the run go to the stash of the configuration (kept, never deleted);
``failures.json`` lists the images that could not be decoded; the run log
(:mod:`stylisticbias.judge.summary`) is written and, when something was judged, logged to MLflow.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stylisticbias.judge.engines.base import ImageItem, JudgeEngine
from stylisticbias.judge.records import FINGERPRINT_FILE, finished_records, stash_dir
from stylisticbias.judge.shards import concat_shards, content_key, record_keys
from stylisticbias.judge.summary import rank_summaries, run_log_path, run_summary
from stylisticbias.outputs import atomic_write_json, atomic_write_parquet
from stylisticbias.schemas import JUDGMENT_RECORDS, write_table
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

SORT_KEYS = ["image_id", "scenario_id", "ordering", "seed"]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def up_to_date(out: Path, items: Sequence[ImageItem], fp: Mapping[str, Any]) -> dict | None:
    """The run log :func:`consolidate` would write when ``out`` already holds exactly this run's
    records, else None (then the stage reads and folds them as usual).

    Up to date: ``_fingerprint.json`` is ``fp``'s, no shard or per-rank summary waits to be
    folded in, ``failures.json`` is empty, the run log of the run that wrote the records is
    there, and ``judgments.parquet`` holds as many records as it says, about exactly the run's
    images (id and bytes). Reads the Parquet footer and the two image columns, never the
    records: a setting only another stage reads (``judge.undecided_warn``) or a label re-runs
    the stage in seconds instead of re-consolidating every record to the same bytes.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    on_disk = _read_json(out / FINGERPRINT_FILE)
    if not isinstance(on_disk, dict) or on_disk.get("sha256") != fp["sha256"]:
        return None
    shard_dir = out / "shards"
    if (shard_dir.exists() and any(shard_dir.iterdir())) or (out / "run.json").exists():
        return None
    if _read_json(out / "failures.json") != []:
        return None
    previous = _read_json(run_log_path(out))
    if not isinstance(previous, dict) or previous.get("model") is None:
        return None
    cols = ["image_id", "image_sha256"]
    try:
        pf = pq.ParquetFile(out / "judgments.parquet")
        if set(pf.schema_arrow.names) != set(JUDGMENT_RECORDS.columns):
            return None
        pairs = pf.read(columns=cols).group_by(cols).aggregate([])
    except (OSError, pa.ArrowException):
        return None
    if previous.get("n_records") != pf.metadata.num_rows:
        return None
    found = set(zip(pairs.column(0).to_pylist(), pairs.column(1).to_pylist(), strict=True))
    if found != {(it.image_id, it.sha256) for it in items}:
        return None
    # what consolidate writes when nothing was judged; the other fields describe the records
    resumed = {
        "images_judged": 0,
        "images_per_rank": [],
        "images_resumed": len(items),
        "engine_stats": [],
        "n_failures": 0,
    }
    return {**previous, **resumed}


def consolidate(
    out: Path,
    items: list[ImageItem],
    engine: JudgeEngine,
    engine_cfg: Mapping[str, Any],
    config: Config,
    *,
    judged: int,
    resumed: int,
    seconds: float,
    fp: Mapping[str, Any] | None = None,
) -> Path:
    """Fold every finished record into ``judgments.parquet``; ``failures.json``; the run log.

    Records of images outside this run go to the stash of this configuration (kept, not
    deleted); the shards and used stash files are removed only after both are written.
    """
    shard_dir = out / "shards"
    model = engine.model_name
    if fp is None:
        fp = json.loads((out / FINGERPRINT_FILE).read_text(encoding="utf-8"))
    sources = finished_records(out, fp, model)
    df = concat_shards(sources)
    key_cols = ["image_id", "image_sha256", "model", "scenario_id", "ordering", "seed"]
    dup = df.duplicated(subset=key_cols)
    if dup.any():
        log.info("%d record(s) present twice (resumed after a kill) dropped", int(dup.sum()))
        df = df.loc[~dup]
    wanted = {f"{it.image_id}@{it.sha256}" for it in items}
    extra = ~(df["image_id"].astype(str) + "@" + df["image_sha256"].astype(str)).isin(wanted)
    stash = stash_dir(out) / str(fp["sha256"])[:16]
    kept = stash / f"other-images-{content_key(record_keys(df.loc[extra]))}.parquet"
    if extra.any():
        log.info(
            "%d image(s) with finished records are not part of this run or were judged as other "
            "bytes; kept in %s",
            df.loc[extra, "image_id"].nunique(),
            stash,
        )
        rest = df.loc[extra].sort_values(SORT_KEYS, kind="stable").reset_index(drop=True)
        atomic_write_parquet(rest, kept)
        df = df.loc[~extra]
    df = df.sort_values(SORT_KEYS, kind="stable").reset_index(drop=True)
    write_table(df, out / "judgments.parquet", JUDGMENT_RECORDS)
    used = {stash_dir(out) / str(sha)[:16] for sha in (fp["sha256"], *fp.get("aliases", ()))}
    for p in sources:  # folded into judgments.parquet or `kept`
        if p.parent in used and p != kept:
            p.unlink(missing_ok=True)
    for d in used:
        if d.exists() and not any(d.iterdir()):
            d.rmdir()
    summaries = rank_summaries(shard_dir)
    failures = sorted(
        (f for s in summaries for f in s.get("failures", [])), key=lambda f: f["image_id"]
    )
    atomic_write_json(out / "failures.json", failures)
    if failures:
        ids = [f["image_id"] for f in failures]
        log.warning(
            "%d image(s) could not be decoded: %s%s (listed in %s; a re-run retries them)",
            len(ids),
            ", ".join(ids[:20]),
            " ..." if len(ids) > 20 else "",
            out / "failures.json",
        )
    failed = {f["image_id"] for f in failures}
    missing = {it.image_id for it in items} - set(df["image_id"]) - failed
    if missing:
        log.warning(
            "%d image(s) have no records: %s", len(missing), ", ".join(sorted(missing)[:20])
        )

    summary = run_summary(
        df,
        engine,
        engine_cfg,
        engine.judge_cfg,
        summaries,
        out,
        judged=judged,
        resumed=resumed,
        seconds=seconds,
        n_failures=len(failures),
    )
    run_log = run_log_path(out)
    atomic_write_json(run_log, summary)
    # consolidated: shards and per-rank summaries (timings) are folded into the files above
    shutil.rmtree(shard_dir, ignore_errors=True)
    (out / "run.json").unlink(missing_ok=True)  # where earlier versions wrote the run log
    log.info(
        "%s: %d records for %d images -> %s (%.1f images/s)",
        model,
        summary["n_records"],
        summary["n_images"],
        out / "judgments.parquet",
        summary["images_per_s"] or 0.0,
    )
    if not judged:  # nothing new: the last run that judged is the one MLflow holds
        log.info("%s: nothing judged; no MLflow run opened", model)
        return out
    from stylisticbias.tracking import log_judge_run

    try:
        run_id = log_judge_run(config.tracking, engine.run_params(), summary)
    except Exception as exc:  # tracking must never lose finished judgments
        log.warning(
            "MLflow logging failed (%s: %s); judgments are written", type(exc).__name__, exc
        )
        run_id = None
    if run_id:
        summary["mlflow_run_id"] = run_id
        atomic_write_json(run_log, summary)
    return out
