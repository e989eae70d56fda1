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

Beside it, ``data/judgments/<model>.run.json`` (:func:`~.summary.run_log_path`) -- model,
engine, decoding, counts, timing, invalid rate, undecided mass, image tokens per image (if the
engine reports them), simulated flag, MLflow run id. It describes the invocation, not the data,
so it lives outside the DVC output: identical judgments hash identically whatever the timing
(the per-rank summaries, which carry timings too, are removed once consolidated).

Before anything is touched the whole ``judge`` section is checked
(:class:`~stylisticbias.judge.protocol.settings.JudgeSettings`), the output path is checked
(:func:`stylisticbias.output_paths.stage_output`), a lock refuses a second process on the same
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

The parts: :mod:`~stylisticbias.judge.items` (the images, checked),
:mod:`~stylisticbias.judge.fingerprint` (what determines the records),
:mod:`~stylisticbias.judge.records` (finished records, the stash),
:mod:`~stylisticbias.judge.consolidate` (folding them into ``judgments.parquet``) and
:mod:`~stylisticbias.judge.summary` (the run log).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.config import project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import family_of
from stylisticbias.judge.consolidate import consolidate, up_to_date
from stylisticbias.judge.engines.base import ImageItem, JudgeEngine
from stylisticbias.judge.engines.factory import engine_class, make_engine
from stylisticbias.judge.fingerprint import fingerprint
from stylisticbias.judge.items import judge_items
from stylisticbias.judge.predict_core import runs_inline
from stylisticbias.judge.preflight import check_model
from stylisticbias.judge.protocol.settings import JudgeSettings
from stylisticbias.judge.records import finished_records, stash_dir, switch_configuration
from stylisticbias.judge.shards import RANK_SUMMARY_GLOB
from stylisticbias.judge.summary import run_log_path
from stylisticbias.output_paths import stage_output
from stylisticbias.outputs import OutputLock, atomic_write_json
from stylisticbias.spec import Config

log = logging.getLogger(__name__)


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


def _rank() -> int:
    """This process's global rank under torchrun/SLURM (0 when not distributed)."""
    for var in ("RANK", "SLURM_PROCID"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def run_judge(
    model_name: str,
    config: Config,
    *,
    progress: bool = True,
    out_dir: str | Path | None = None,
) -> Path:
    """Judge all images of the run with one model; returns ``data/judgments/<model>/``.

    Every rank of a multi-process run calls this; only rank 0 consolidates, writes the run log
    (:func:`~.summary.run_log_path`) and logs to MLflow. The protocol (``config.protocol``) is
    resolved here, once, and its family's judge hook (:func:`stylisticbias.family.family_of`)
    runs it: :func:`judge_forced_choice`, or a family's own (the tasks family's task records).
    """
    benchmark = load_benchmark(config.protocol)
    judge = family_of(benchmark).hook("judge")
    return judge(model_name, config, benchmark, out_dir=out_dir, progress=progress)


def judge_forced_choice(
    model_name: str,
    config: Config,
    benchmark: Benchmark,
    *,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> Path:
    """The judge stage of a forced-choice protocol (the ``scenarios:`` x orderings grid)."""
    model_cfg = model_section(config, model_name)
    engine_cfg = dict(model_cfg.get("engine") or {})
    judge_cfg = asdict(config.judge)
    root = project_root()
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
    # an engine whose records depend on its settings only (hf): nothing to do is known before
    # its weights load
    if not judge_cfg.get("dry_run") and not hasattr(engine_class(model_cfg), "fingerprint"):
        fp = fingerprint(model_cfg, engine_cfg, judge_cfg, benchmark, None)
        if _nothing_to_do(root, out, items, fp, model_name):
            return out
    if not judge_cfg.get("dry_run"):  # the expected time of a slow placement (hf on a CPU)
        n_scenarios = len(judge_cfg.get("scenarios") or benchmark.scenarios)
        check_model(
            model_cfg,
            engine_cfg,
            n_prompts=n_scenarios * len(settings.orderings),
            n_images=len(items),
        )
    engine = make_engine(model_cfg, judge_cfg, benchmark)
    if judge_cfg.get("dry_run"):  # estimate requests/tokens/cost; nothing is sent or written
        return _dry_run(engine, items, out)
    fp = fingerprint(model_cfg, engine_cfg, judge_cfg, benchmark, engine)
    rank = _rank()
    if rank == 0 and _nothing_to_do(root, out, items, fp, model_name):
        return out
    lock = OutputLock(root, out) if rank == 0 else contextlib.nullcontext()
    with lock:
        return _run_locked(out, items, engine, engine_cfg, config, fp, rank, progress=progress)


def _nothing_to_do(
    root: Path, out: Path, items: list[ImageItem], fp: Mapping[str, Any], model_name: str
) -> bool:
    """Whether ``out`` already holds exactly this run's consolidated records
    (:func:`~.consolidate.up_to_date`): then only the run log is rewritten, as a run that judged
    nothing writes it, and neither the records nor ``judgments.parquet`` are read or written."""
    if not (out / "judgments.parquet").is_file():
        return False
    with OutputLock(root, out):
        summary = up_to_date(out, items, fp)
        if summary is None:
            return False
        atomic_write_json(run_log_path(out), summary)
    log.info(
        "%s: %d records for %d images in %s are this configuration's: nothing to judge or "
        "consolidate; no MLflow run opened",
        model_name,
        summary["n_records"],
        len(items),
        out / "judgments.parquet",
    )
    return True


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
        if runs_inline(engine, engine_cfg):  # no weights, one process: no Trainer needed
            from stylisticbias.judge.inline_runner import predict
        else:  # weights to place, or ranks to shard over: Lightning, one replica per rank
            from stylisticbias.judge.lightning_runner import predict

        if hasattr(engine, "prefetch"):  # openai with endpoint.batch: batch jobs fill its cache
            engine.prefetch(todo, out)
        if progress and hasattr(engine, "plan"):  # engines with their own progress bar
            engine.plan(todo)

        rank, _ = predict(engine, todo, shard_dir, engine_cfg, progress=progress)
    seconds = time.perf_counter() - t0
    if rank != 0:
        return out
    return consolidate(
        out,
        items,
        engine,
        engine_cfg,
        config,
        judged=len(todo),
        resumed=len(items) - len(todo),
        seconds=seconds,
        fp=fp,
    )


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
