"""The judge stage: judge every image of the run for one model, resumably, and consolidate.

Output, ``data/judgments/<model>/``:

- ``judgments.parquet`` -- every record, validated (JUDGMENT_RECORDS: the engines' JUDGMENTS
  columns plus ``image_sha256``, the hash of the judged bytes), sorted by image_id,
  scenario_id, ordering, seed;
- ``failures.json`` -- images that could not be decoded (``[]`` when none);
- ``_fingerprint.json`` -- the configuration that determines the records;
- while a run is under way, ``shards/shard-<key>.parquet`` -- one shard per batch, named by
  the content of the batch only (never by rank, batch index or time), folded into
  ``judgments.parquet`` and removed at the end, so an interrupted and resumed run leaves the
  same bytes -- and the same DVC hash -- as an uninterrupted one.

Beside it, ``data/judgments/<model>.run.json`` (:func:`run_log_path`) -- model, engine,
decoding, counts, timing, invalid rate, undecided mass, image tokens per image (if the engine
reports them), simulated flag, MLflow run id. It describes the invocation, not the data, so it
lives outside the DVC output: identical judgments hash identically whatever the timing (the
per-rank summaries, which carry timings too, are removed once consolidated).

Before anything is touched the whole ``judge`` section is checked
(:class:`~stylisticbias.judge.protocol.settings.JudgeSettings`), the output path is checked
(:func:`stylisticbias.outputs.stage_output`), a lock refuses a second process on the same
output, and every image is checked: its manifest path must stay inside its table's directory and
its bytes must match the manifest's sha256.

Resuming: a run first lists the finished records (``judgments.parquet``, complete shards and
the stash of the current configuration), skips their images and judges only the rest; a shard
that is unreadable or fails the schema is logged, deleted and redone. Finished records are never
discarded. A record is about the bytes it judged: an image whose bytes changed (re-rendered,
re-imported, another generator) is judged again, and its records about the old bytes are kept
in the stash of the configuration, used again if those bytes come back. When the configuration
that determines the records changed (model, engine settings,
orderings, seeds, prompts, planted effects...), they are moved to the stash
``<out>/../.<model>.stash/<fingerprint>/`` and used again if that configuration returns; records
of images that are not part of this run are kept there too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.config import project_root
from stylisticbias.dataset.render_cache import sha256_file
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.datamodule import build_items
from stylisticbias.judge.engines.base import ImageItem, JudgeEngine
from stylisticbias.judge.engines.factory import make_engine
from stylisticbias.judge.preflight import check_model
from stylisticbias.judge.protocol.settings import JudgeSettings
from stylisticbias.judge.records import (
    FINGERPRINT_FILE,
    finished_records,
    stash_dir,
    switch_configuration,
)
from stylisticbias.judge.task_judging import judge_task_protocol
from stylisticbias.judge.task_run import is_task_protocol
from stylisticbias.judge.writer import (
    RANK_SUMMARY_GLOB,
    concat_shards,
    content_key,
    record_keys,
)
from stylisticbias.outputs import (
    OutputLock,
    atomic_write_json,
    atomic_write_parquet,
    data_root,
    safe_member,
    stage_output,
)
from stylisticbias.qa.checks import qa_exclusions
from stylisticbias.schemas import (
    FACES,
    JUDGMENT_RECORDS,
    VARIATIONS,
    check_demographics,
    read_table,
    write_table,
)
from stylisticbias.spec import Config
from stylisticbias.spec.sections import PathsSpec

log = logging.getLogger(__name__)

SORT_KEYS = ["image_id", "scenario_id", "ordering", "seed"]
#: engine settings that change speed or placement, never the records
_NON_RESULT_ENGINE_KEYS = {
    "allow_remote_licensed_images",
    "lightning",
    "image_batch_size",
    "num_workers",
    "device",
    "suffix_batch_size",
    "branch_batch_size",
    "suffix_padding",  # padded and per-length batches give the same records (test_hf_exact_padding)
    "progress",
}
#: model keys that name or label the model in reports, never change its records
_NON_RESULT_MODEL_KEYS = {"engine", "_target_", "paper_name", "display_name", "max_images"}
#: judge keys read by other stages (scores: undecided_*, parser) or that select images / the
#: dry run: none changes a record
_NON_RESULT_JUDGE_KEYS = {
    "models",
    "images",
    "dry_run",
    "undecided_warn",
    "undecided_max",
    "parser",
}


def _path(paths: PathsSpec, key: str) -> Path:
    p = Path(getattr(paths, key))
    return p if p.is_absolute() else project_root() / p


def model_section(config: Config, model_name: str) -> dict[str, Any]:
    """One judged model's section (``models.<name>``, its ``engine`` included) as composed.

    The section stays a mapping below this point: an engine reads its own keys (a plug-in
    engine's are unknown here), and the fingerprint and MLflow hash and log it as written. The
    typed spec round-trips it exactly (every key of the schema is in the composed section).
    """
    if model_name not in config.models:
        raise StylisticBiasError(
            f"model {model_name!r} is not judged in params.yaml (models: "
            f"{', '.join(config.models) or 'none'}); add it with `model=[...]` or an experiment "
            "(conf/experiment/*.yaml) and re-compose"
        )
    return asdict(config.models[model_name])


def load_tables(
    paths: PathsSpec, benchmark: Benchmark
) -> tuple[pd.DataFrame, pd.DataFrame, Path, Path]:
    """Read and validate the faces and variations tables; returns their directories too."""
    faces_dir, var_dir = _path(paths, "faces"), _path(paths, "variations")
    faces = read_table(faces_dir / "faces.parquet", FACES)
    variations = read_table(var_dir / "variations.parquet", VARIATIONS)
    demo = benchmark.demographics
    check_demographics(faces, demo, faces_dir / "faces.parquet")
    check_demographics(variations, demo, var_dir / "variations.parquet")
    return faces, variations, faces_dir, var_dir


def judge_items(
    config: Config, benchmark: Benchmark | None = None, *, verify: bool = False
) -> list[ImageItem]:
    """The images a judge run covers (see :func:`~stylisticbias.judge.datamodule.build_items`).

    ``benchmark`` is the stage's protocol, resolved once by the caller (None: the one
    ``config.protocol`` names).

    Every manifest path must stay inside its table's directory (absolute paths, ``..`` and
    symlinks that leave it are refused, never opened). With ``verify``, every image's bytes are
    also checked against the manifest's sha256 (:func:`verify_images`).
    """
    benchmark = benchmark if benchmark is not None else load_benchmark(config.protocol)
    faces, variations, faces_dir, var_dir = load_tables(config.paths, benchmark)
    items = build_items(faces, variations, faces_dir, var_dir, images=config.judge.images)
    excluded = qa_exclusions(config)  # qa.policy=exclude: edits that failed a QA check
    if excluded:
        log.warning("qa.policy=exclude: %d failing edit(s) are not judged (data/qa/summary.json)",
                    sum(it.image_id in excluded for it in items))  # fmt: skip
        items = [it for it in items if it.image_id not in excluded]
    shas: dict[str, str] = {}
    data = data_root(project_root(), config.paths.data)
    for name, table, base in (
        ("faces.parquet", faces, faces_dir),
        ("variations.parquet", variations, var_dir),
    ):
        ok = table[table["status"] == "ok"]
        for idx, iid, rel, sha in zip(ok.index, ok["image_id"], ok["path"], ok["sha256"]):
            safe_member(base, str(rel), f"{base / name} row {idx} ({iid})", data)
            shas[str(iid)] = str(sha)
    if verify:
        verify_images(items, shas)
    return items


def verify_images(items: list[ImageItem], shas: Mapping[str, str]) -> None:
    """Raise naming the first image that is missing or whose bytes differ from its sha256."""
    for it in items:
        path = Path(it.path)
        if not path.is_file():
            raise StylisticBiasError(
                f"{path}: missing image {it.image_id} (listed in the manifest)"
            )
        if sha256_file(path) != shas.get(it.image_id):
            raise StylisticBiasError(
                f"{path}: image {it.image_id} no longer matches the manifest's sha256; "
                "re-run the stage that made it (dvc repro faces / variations) -- nothing judged"
            )


def fingerprint(
    model_cfg: Mapping[str, Any],
    engine_cfg: Mapping[str, Any],
    judge_cfg: Mapping[str, Any],
    benchmark: Benchmark,
    engine: JudgeEngine,
) -> dict[str, Any]:
    """Everything that determines the records, and only that: not which images, not speed
    settings, not labels (``paper_name``, ``display_name``), not the settings other stages read
    (``judge.undecided_warn``/``undecided_max``/``parser``) -- changing one of those must not
    judge everything again.

    ``aliases`` holds the sha256 the same configuration had when those keys still counted, so
    the records of an earlier version are recognised as this configuration's (not stashed).
    """

    def digest(model_skip: set[str], judge_skip: set[str]) -> tuple[str, Any]:
        fp: dict[str, Any] = {
            "model": {k: v for k, v in model_cfg.items() if k not in model_skip},
            "engine": {k: v for k, v in engine_cfg.items() if k not in _NON_RESULT_ENGINE_KEYS},
            "judge": {k: v for k, v in judge_cfg.items() if k not in judge_skip},
            # optional annotations enter only when set (a protocol without them keeps its print)
            "scenarios": [
                {k: v for k, v in s.__dict__.items() if v not in ("", (), None)}
                for s in benchmark.scenarios
            ],
            "orderings": [
                [o.id, o.slots, *([o.answer] if o.answer else [])] for o in benchmark.orderings
            ],
            "forced_choice": benchmark.prompts.get("forced_choice"),
        }
        if hasattr(engine, "fingerprint"):
            fp["engine_extra"] = engine.fingerprint()
        blob = json.dumps(fp, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest(), json.loads(blob)

    sha, config = digest(_NON_RESULT_MODEL_KEYS, _NON_RESULT_JUDGE_KEYS)
    legacy, _ = digest({"engine", "_target_", "max_images"}, {"models", "images", "dry_run"})
    return {"sha256": sha, "config": config, "aliases": [legacy] if legacy != sha else []}


def _rank() -> int:
    """This process's global rank under torchrun/SLURM (0 when not distributed)."""
    for var in ("RANK", "SLURM_PROCID"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def run_log_path(out: Path) -> Path:
    """The run log of the judgments directory ``out``: ``<out>.run.json``, beside it."""
    return out.parent / f"{out.name}.run.json"


def run_judge(
    model_name: str,
    config: Config,
    *,
    progress: bool = True,
    out_dir: str | Path | None = None,
) -> Path:
    """Judge all images of the run with one model; returns ``data/judgments/<model>/``.

    Every rank of a multi-process run calls this; only rank 0 consolidates, writes the run log
    (:func:`run_log_path`) and logs to MLflow. The protocol (``config.protocol``) is resolved
    here, once, and passed on.
    """
    model_cfg = model_section(config, model_name)
    engine_cfg = dict(model_cfg.get("engine") or {})
    judge_cfg = asdict(config.judge)
    benchmark = load_benchmark(config.protocol)
    root = project_root()
    if is_task_protocol(benchmark):  # REFLECT, VIGNETTE, ...: task records, not judgments
        out = Path(out_dir) if out_dir else _path(config.paths, "judgments") / model_name
        return judge_task_protocol(model_name, model_cfg, benchmark, config, out)
    # everything is checked before the output is touched
    settings = JudgeSettings.from_config(judge_cfg, benchmark.ordering_ids)
    judge_cfg["orderings"] = list(settings.orderings)  # `all` -> the protocol's ordering ids
    if not judge_cfg.get("dry_run"):  # weights on disk or reachable, endpoint up, key set
        check_model(model_cfg, engine_cfg)
    paths = {"paths": asdict(config.paths)}
    out = Path(out_dir) if out_dir else stage_output(paths, "judgments", root) / model_name
    items = judge_items(config, benchmark, verify=True)
    if not items:
        raise StylisticBiasError("no images to judge: faces/variations have no rows with status ok")
    if not judge_cfg.get("dry_run"):  # the expected time of a slow placement (hf on a CPU)
        n_scenarios = len(judge_cfg.get("scenarios") or benchmark.scenarios)
        check_model(model_cfg, engine_cfg, n_prompts=n_scenarios * len(settings.orderings),
                    n_images=len(items))  # fmt: skip
    engine = make_engine(model_cfg, judge_cfg, benchmark)
    if judge_cfg.get("dry_run"):  # estimate requests/tokens/cost; nothing is sent or written
        return _dry_run(engine, items, out)
    fp = fingerprint(model_cfg, engine_cfg, judge_cfg, benchmark, engine)
    rank = _rank()
    lock = OutputLock(root, out) if rank == 0 else contextlib.nullcontext()
    with lock:
        return _run_locked(out, items, engine, engine_cfg, config, fp, rank, progress=progress)


def _run_locked(
    out: Path,
    items: list[ImageItem],
    engine: JudgeEngine,
    engine_cfg: Mapping[str, Any],
    config: Config,
    fp: Mapping[str, Any],
    rank: int,
    *,
    progress: bool,
) -> Path:
    shard_dir = out / "shards"
    model_name = engine.model_name
    if rank == 0:
        switch_configuration(out, fp)
    finished = finished_records(out, fp, model_name)
    done: set[tuple[str, str]] = set()
    for recs in finished.values():
        pairs = recs[["image_id", "image_sha256"]].drop_duplicates()
        done.update(zip(pairs["image_id"], pairs["image_sha256"]))
    del finished
    todo = [it for it in items if (it.image_id, it.sha256) not in done]
    changed = {i for i, _ in done} & {it.image_id for it in todo}
    log.info(
        "%s: %d image(s) to judge, %d already judged", model_name, len(todo), len(items) - len(todo)
    )
    if changed:
        log.warning(
            "%s: %d image(s) have records about other bytes (re-rendered or re-imported), "
            "judged again; the old records are kept in %s",
            model_name,
            len(changed),
            stash_dir(out),
        )
    if rank == 0:
        for p in shard_dir.glob(RANK_SUMMARY_GLOB):
            p.unlink(missing_ok=True)

    t0 = time.perf_counter()
    if todo:
        from stylisticbias.judge.lightning_runner import predict

        if progress and hasattr(engine, "plan"):  # engines with their own progress bar
            engine.plan(todo)

        rank, _ = predict(engine, todo, shard_dir, engine_cfg, progress=progress)
    seconds = time.perf_counter() - t0
    if rank != 0:
        return out
    return consolidate(
        out, items, engine, engine_cfg, config,
        judged=len(todo), resumed=len(items) - len(todo), seconds=seconds, fp=fp,
    )  # fmt: skip


def _dry_run(engine: JudgeEngine, items: list[ImageItem], out: Path) -> Path:
    """``judge.dry_run=true``: log the engine's estimate (requests, tokens, cost) and stop."""
    estimate = getattr(engine, "estimate", None)
    if estimate is None:
        raise StylisticBiasError(
            f"judge.dry_run: engine {engine.engine_cfg.get('name')!r} has no estimate; "
            "valid with: openai"
        )
    estimate(items)
    return out


def _rank_summaries(shard_dir: Path) -> list[dict[str, Any]]:
    out = []
    for p in sorted(shard_dir.glob(RANK_SUMMARY_GLOB)):
        try:
            out.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError):
            log.warning("unreadable rank summary %s", p.name)
    return out


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
    summaries = _rank_summaries(shard_dir)
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

    summary = run_summary(df, engine, engine_cfg, engine.judge_cfg, summaries, out,
                          judged=judged, resumed=resumed, seconds=seconds,
                          n_failures=len(failures))  # fmt: skip
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


def run_summary(
    df: pd.DataFrame,
    engine: JudgeEngine,
    engine_cfg: Mapping[str, Any],
    judge_cfg: Mapping[str, Any],
    rank_summaries: list[dict[str, Any]],
    out: Path,
    *,
    judged: int,
    resumed: int,
    seconds: float,
    n_failures: int,
) -> dict[str, Any]:
    """The run log's content. Speeds refer to the images judged by this invocation."""
    n_images = int(df["image_id"].nunique())
    n_scen = int(df["scenario_id"].nunique()) if len(df) else 0
    n_ord = int(df["ordering"].nunique()) if len(df) else 0
    drawn = df[df["seed"] > 0]
    n_seeds = int(drawn["seed"].nunique()) if len(drawn) else 0
    prompts_per_image = n_scen * n_ord * max(n_seeds, 1)
    judged_images = sum(int(s.get("images", 0)) for s in rank_summaries)
    wall = max([float(s.get("seconds", 0.0)) for s in rank_summaries] + [0.0]) or seconds
    stats = [s.get("engine_stats") or {} for s in rank_summaries]
    tokens = [
        s["image_tokens_per_image"] for s in stats if s.get("image_tokens_per_image") is not None
    ]
    summary: dict[str, Any] = {
        "model": engine.model_name,
        "engine": engine_cfg.get("name"),
        "decoding": engine_cfg.get("decoding"),
        "simulated": bool(df["simulated"].any())
        if len(df)
        else engine_cfg.get("name") == "simulated",
        "n_images": n_images,
        "n_records": len(df),
        "n_failures": n_failures,
        "n_scenarios": n_scen,
        "n_orderings": n_ord,
        "n_seeds": n_seeds,
        "images_judged": judged_images,
        "images_per_rank": [int(s.get("images", 0)) for s in rank_summaries],
        "images_resumed": resumed,
        "seconds": round(wall, 3) if judged_images else None,
        "images_per_s": judged_images / wall if judged_images and wall > 0 else None,
        "prompts_per_s": judged_images * prompts_per_image / wall
        if judged_images and wall > 0
        else None,
        "invalid_rate": float(df["p_invalid"].mean()) if len(df) else None,
        "invalid_share_drawn": float((drawn["choice"] == "invalid").mean()) if len(drawn) else None,
        "undecided_mass": float(df["p_undecided"].mean()) if len(df) else None,
        "image_tokens_per_image": float(sum(tokens) / len(tokens)) if tokens else None,
        "orderings": list(judge_cfg.get("orderings", [])),
        "seeds": list(judge_cfg.get("seeds", [])),
        "temperature": judge_cfg.get("temperature"),
        "engine_stats": stats,
    }
    if not judged_images:  # fully resumed: keep the speed of the run that did the work
        prev = run_log_path(out)
        if prev.exists():
            try:
                old = json.loads(prev.read_text(encoding="utf-8"))
                keep = ("seconds", "images_per_s", "prompts_per_s", "image_tokens_per_image",
                        "mlflow_run_id")  # fmt: skip
                for k in keep:
                    if summary.get(k) is None:
                        summary[k] = old.get(k)
            except (OSError, json.JSONDecodeError):
                pass
    return summary


def clean(out: Path) -> None:
    """Remove a model's judgments directory, its stash and its run log (a fresh start)."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(stash_dir(out), ignore_errors=True)
    run_log_path(out).unlink(missing_ok=True)
