"""The judge stage for a task protocol with a model engine (``hf``, ``openai``): every task
prompt asked of the protocol's faces, written as the same task records as the simulated judge's
(:mod:`~stylisticbias.judge.protocol.tasks.records`).

Units are those of :func:`~stylisticbias.families.tasks.judge.run.task_units`: every face
with status ok for single-image tasks, cross-group pairs (in both orders) for pairwise ones --
two edits of one source photo when the faces are counterfactual sets (the source is then every
record's unit). Each (task prompt, unit) becomes a
:class:`~stylisticbias.judge.protocol.tasks.asks.TaskAsk`:

* ``pairwise`` with ``layout: two_images``: the two image files in slot order (variant 0: the
  pair's ``first`` in slot 1; variant 1 swapped); ``layout: composite``: one side-by-side image
  (:mod:`~stylisticbias.judge.protocol.tasks.composites`: a fixed two-cell canvas, the
  slot-1 identity on the left), written once per (left image, right image, layout) to the
  content-hashed cache ``<out>/../.composites/`` shared by every model; the records'
  ``left_id``/``right_id`` say which image was on the left;
* ``text_only``: no image; ``{description}`` names the person (or the first and second person,
  in slot order) from the face's demographic columns;
* every other task: the face's image.

The engine answers each ask (``answer_tasks``): an exact distribution over the task's labels
where its decoding computes one (``exact``/``sampled``), else a generated text; the task type
reads it (:func:`~stylisticbias.judge.protocol.tasks.asks.read_reply`). An ask that cannot be
asked (a pairwise task given fewer than two images, e.g. a face without an image) is recorded as
invalid with the reason, never sent.

Resuming: the units are judged in batches, each batch's records written to
``<out>/shards/shard-<key>.parquet`` (the key a hash of its units, their image bytes and the
tasks); a rerun takes a batch from its complete shard, or from the consolidated
``task_records.parquet`` of the same configuration (``_fingerprint.json``) when every record of
the batch is there about the same image bytes (``_images.json``), and judges only the rest. A
changed configuration moves the old shards to the stash first. The consolidated file is written
at the end and the shards removed, so an interrupted and resumed run leaves the same bytes as an
uninterrupted one. The ``openai`` engine's response cache makes a re-asked prompt free; with
``endpoint.batch`` every ask still to judge is first asked through provider batch jobs
(``engine.prefetch_tasks``, jobs recorded in ``<out>/batch/``), so the batches are then
answered from that cache.

Each record is one answer per (task prompt, unit), seeded by the first of ``judge.seeds``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.benchmark import Benchmark, TaskScenario
from stylisticbias.config import project_root
from stylisticbias.dataset.counterfactual_sets import read_sets
from stylisticbias.dataset.render_cache import sha256_file
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.judge.plants import face_group
from stylisticbias.families.tasks.judge.run import BLOCK, run_task_judge, task_units
from stylisticbias.families.tasks.judge.tracking import (
    finish_task_run,
    task_run_params,
    task_summary,
)
from stylisticbias.judge.engines.factory import make_engine
from stylisticbias.judge.items import stage_path
from stylisticbias.judge.protocol.tasks.asks import TaskAsk, read_reply
from stylisticbias.judge.protocol.tasks.capabilities import answered_as, asks_pair
from stylisticbias.judge.protocol.tasks.composites import LAYOUT, composite_file
from stylisticbias.judge.protocol.tasks.records import (
    RECORDS_FILE,
    TASK_RECORDS,
    positions,
    validate_task_records,
)
from stylisticbias.judge.protocol.tasks.registry import check_engine_tasks, task_of
from stylisticbias.judge.protocol.tasks.scenario_task import INVALID, TaskPrompt
from stylisticbias.judge.protocol.tasks.text_only import with_description
from stylisticbias.judge.records import FINGERPRINT_FILE, switch_configuration
from stylisticbias.judge.summary import batch_jobs
from stylisticbias.output_paths import data_root, safe_member
from stylisticbias.outputs import OutputLock, atomic_path, atomic_write_json
from stylisticbias.schemas import FACES, check_demographics, read_table
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

#: units per shard (one engine call each)
BATCH = 8
#: the sha256 of every image the records judged (a changed image is judged again)
IMAGES_FILE = "_images.json"
#: engine keys that change speed or placement, never the records
_SPEED_KEYS = {
    "lightning",
    "image_batch_size",
    "num_workers",
    "device",
    "suffix_batch_size",
    "branch_batch_size",
    "suffix_padding",
    "progress",
    "allow_remote_licensed_images",
}
#: model keys that label the model or state what it can do, never change its records
_LABEL_KEYS = {"engine", "_target_", "paper_name", "display_name", "max_images"}


@dataclass(frozen=True)
class Face:
    """One face of the faces table: its ids, group, image file, bytes and demographics."""

    face_id: str
    image_id: str
    group: str
    path: str
    attrs: Mapping[str, str]
    sha256: str = ""


@dataclass(frozen=True)
class Unit:
    """What one task prompt is asked about: one face, or a pair (``first``, ``second``).

    ``unit``: the records' sampling unit (the face itself; the source photo of counterfactual
    sets; a block of faces for pairs of different people).
    ``pair``: the unit of pairwise tasks (its faces should be two; one with fewer is recorded
    invalid for every pairwise prompt, with the reason).
    """

    unit: str
    faces: tuple[Face, ...]
    pair: bool = False

    @property
    def image_ids(self) -> str:
        """``|``-joined image ids in identity order (the records' ``image_ids``)."""
        return "|".join(f.image_id for f in self.faces)


def describe(face: Face) -> str:
    """A face in words from its demographic columns (``a young adult Asian male person``)."""
    a = face.attrs
    words = [a.get("age", ""), a.get("ethnicity", ""), a.get("gender", "")]
    body = a.get("body_type", "")
    text = " ".join(w for w in words if w) + " person"
    if body and body not in ("unspecified", "average"):
        text += f" of {body} build"
    article = "an" if text[:1].lower() in "aeiou" else "a"
    return f"{article} {text}"


def description(prompt: TaskPrompt, unit: Unit) -> str:
    """The ``{description}`` of a text-only prompt: the person, or both people in slot order."""
    if len(unit.faces) == 1:
        return f"The person is {describe(unit.faces[0])}."
    by = {"first": unit.faces[0], "second": unit.faces[1]}
    slots = prompt.slots or ("first", "second")
    return (
        f"The first person is {describe(by[slots[0]])}. "
        f"The second person is {describe(by[slots[1]])}."
    )


def load_faces(config: Config, benchmark: Benchmark) -> tuple[pd.DataFrame, dict[str, Face]]:
    """The faces table and its faces with status ok by image id, their image files checked:
    inside the data root and with the bytes the manifest's sha256 names (one error line naming
    the file otherwise)."""
    root = project_root()
    faces_dir = stage_path(config.paths, "faces")
    table = faces_dir / "faces.parquet"
    faces = read_table(table, FACES)
    check_demographics(faces, benchmark.demographics, table)
    data = data_root(root, config.paths.data)
    out = {}
    ok = faces[faces["status"] == "ok"]
    for idx, r in zip(ok.index, ok.itertuples(index=False)):
        path = safe_member(faces_dir, str(r.path), f"{table} row {idx} ({r.image_id})", data)
        if not path.is_file():
            raise StylisticBiasError(f"{path}: missing image {r.image_id} (listed in {table})")
        if sha256_file(path) != str(r.sha256):
            raise StylisticBiasError(
                f"{path}: image {r.image_id} no longer matches the manifest's sha256; re-run the "
                "stage that made it (dvc repro faces) -- nothing judged"
            )
        attrs = {k: str(getattr(r, k)) for k in ("age", "gender", "ethnicity", "body_type")}
        out[str(r.image_id)] = Face(
            str(r.face_id),
            str(r.image_id),
            face_group(attrs["ethnicity"], attrs["gender"]),
            str(path),
            attrs,
            str(r.sha256),
        )
    return faces, out


def units_of(
    faces: pd.DataFrame, by_image: Mapping[str, Face], sets: pd.DataFrame | None = None
) -> tuple[list[Unit], list[Unit]]:
    """Single-face units and pair units: the simulated route's
    (:func:`~stylisticbias.families.tasks.judge.run.task_units`; with counterfactual ``sets``
    the unit is the source photo), with their faces' image files."""
    singles, pairs = task_units(faces, sets)
    return (
        [Unit(unit, (by_image[iid],)) for _, iid, _, unit in singles],
        [Unit(inst, (by_image[a], by_image[b]), pair=True) for inst, (a, b), _ in pairs],
    )


def selected_tasks(benchmark: Benchmark, ids: Any) -> list[TaskScenario]:
    """The tasks ``judge.scenarios`` selects (``all``: every task of the protocol)."""
    if ids in (None, "all"):
        return list(benchmark.tasks)
    return [benchmark.task_scenario(int(i)) for i in ids]


def _composite_file(left: Face, right: Face, cache: Path) -> str:
    """The side-by-side image of two faces (``left`` on the left), written once to ``cache``."""
    return str(composite_file((left.path, left.sha256), (right.path, right.sha256), cache))


def make_ask(
    sc: TaskScenario, prompt: TaskPrompt, unit: Unit, benchmark: Benchmark, seed: int, cache: Path
) -> TaskAsk | str:
    """The ask of one task prompt about one unit, or why it cannot be asked (one line)."""
    task = task_of(sc)
    need = 2 if asks_pair(sc) else 1
    key = f"{sc.id}|{prompt.variant}|{unit.unit}|{unit.image_ids}"
    if len(unit.faces) != need:
        return (
            f"task {sc.id} ({sc.task}) prompt {prompt.variant} needs {need} image(s) "
            f"(one per identity), got {len(unit.faces)}"
        )
    by = dict(zip(("first", "second"), unit.faces)) if need == 2 else {"first": unit.faces[0]}
    slots = prompt.slots or ("first",)
    if prompt.images == 0:
        images: tuple[str, ...] = ()
        prompt = with_description(prompt, description(prompt, unit))
    elif prompt.images == 1 and need == 2:  # a composite: slot 1 on the left
        images = (_composite_file(by[slots[0]], by[slots[1]], cache),)
    else:
        images = tuple(by[s].path for s in slots[: prompt.images])
    return TaskAsk(key, prompt.text, images, task.rules(sc, benchmark), seed, sc.system)


def _row(model: str, sc: TaskScenario, prompt: TaskPrompt, unit: Unit) -> dict[str, Any]:
    return {
        "model": model,
        "task_id": int(sc.id),
        "task": sc.task,
        "answers": answered_as(sc),
        "variant": int(prompt.variant),
        "unit": unit.unit,
        "image_ids": unit.image_ids,
        "first": unit.faces[0].group if unit.faces else "",
        "second": unit.faces[1].group if len(unit.faces) > 1 else "",
        **positions([f.image_id for f in unit.faces], prompt),
    }


Pending = list[tuple[dict[str, Any], TaskScenario, TaskPrompt, TaskAsk]]


def unit_asks(
    model: str,
    benchmark: Benchmark,
    tasks: Sequence[TaskScenario],
    units: Sequence[Unit],
    seed: int,
    cache: Path,
) -> tuple[list[dict[str, Any]], Pending]:
    """The records of the asks of ``units`` that cannot be asked (invalid, with the reason) and
    every other (record, task, prompt, ask), under every task of ``tasks`` that applies to
    them (pair tasks to pairs, the others to single faces)."""
    rows: list[dict[str, Any]] = []
    pending: Pending = []
    for unit in units:
        for sc in tasks:
            if asks_pair(sc) != unit.pair:
                continue
            for prompt in task_of(sc).prompts(sc, benchmark):
                row = _row(model, sc, prompt, unit)
                ask = make_ask(sc, prompt, unit, benchmark, seed, cache)
                if isinstance(ask, str):
                    rows.append({**row, **invalid_columns(ask)})
                else:
                    pending.append((row, sc, prompt, ask))
    return rows, pending


def judge_units(
    engine: Any,
    benchmark: Benchmark,
    tasks: Sequence[TaskScenario],
    units: Sequence[Unit],
    seed: int,
    cache: Path,
) -> pd.DataFrame:
    """The task records of ``units`` under every task of ``tasks`` that applies to them (pair
    tasks to pairs, the others to single faces), asked of ``engine`` in one call."""
    model = engine.model_name
    rows, pending = unit_asks(model, benchmark, tasks, units, seed, cache)
    replies = engine.answer_tasks([a for *_, a in pending]) if pending else []
    for (row, sc, prompt, ask), reply in zip(pending, replies, strict=True):
        got = read_reply(task_of(sc), sc, prompt, benchmark, ask, reply)
        ans = got.answer
        numeric = ans.valid and ans.value is not None and answered_as(sc) == "numeric"
        rows.append(
            {
                **row,
                "response": got.response,
                "outcome": ans.outcome,
                "value": float(ans.value) if numeric else float("nan"),  # type: ignore[arg-type]
                "dist": json.dumps(got.dist, sort_keys=True) if got.dist is not None else "",
                "reason": ans.reason or "",
                "undecided": float(got.undecided),
            }
        )
    return records_frame(rows, model)


def invalid_columns(reason: str) -> dict[str, Any]:
    """The answer columns of an ask that could not be asked: invalid, with ``reason``."""
    return {
        "response": "",
        "outcome": INVALID,
        "value": float("nan"),
        "dist": "",
        "reason": reason,
        "undecided": 0.0,
    }


def records_frame(rows: list[dict[str, Any]], model: str) -> pd.DataFrame:
    """Rows as validated task records (typed columns, fixed order)."""
    return validate_task_records(typed(pd.DataFrame(rows, columns=list(TASK_RECORDS))), model)


def typed(df: pd.DataFrame) -> pd.DataFrame:
    """Task records with one dtype per column kind (text as ``object``), however they were
    made or read back, so equal records write equal bytes."""

    df = df.copy()
    for col, kind in TASK_RECORDS.items():
        if kind == "i":
            df[col] = df[col].astype("int64")
        elif kind == "f":
            df[col] = df[col].astype("float64")
        else:
            df[col] = df[col].astype(object)
    return df


def fingerprint(
    model_cfg: Mapping[str, Any],
    judge_cfg: Mapping[str, Any],
    tasks: Sequence[TaskScenario],
    engine: Any,
) -> dict[str, Any]:
    """What determines the records: the model and engine settings (not labels or speed), the
    judge's seeds/temperature/token limit and every judged task as written."""
    engine_cfg = dict(model_cfg.get("engine") or {})
    fp: dict[str, Any] = {
        "model": {k: v for k, v in model_cfg.items() if k not in _LABEL_KEYS},
        "engine": {k: v for k, v in engine_cfg.items() if k not in _SPEED_KEYS},
        "judge": {k: judge_cfg.get(k) for k in ("seeds", "temperature", "max_new_tokens")},
        # a task without a system message hashes as before the key existed
        "tasks": [{k: v for k, v in asdict(t).items() if k != "system" or v} for t in tasks],
        "blocks": BLOCK,
        "composite_layout": asdict(LAYOUT),
    }
    if hasattr(engine, "fingerprint"):
        fp["engine_extra"] = engine.fingerprint()
    blob = json.dumps(fp, sort_keys=True, default=str)
    return {"sha256": hashlib.sha256(blob.encode()).hexdigest(), "config": json.loads(blob)}


def _shard_key(units: Sequence[Unit], tasks: Sequence[TaskScenario]) -> str:
    h = hashlib.sha1()
    for u in units:
        h.update(f"{u.unit}|{u.image_ids}|{'|'.join(f.sha256 for f in u.faces)}\n".encode())
    h.update(",".join(str(t.id) for t in tasks).encode())
    return h.hexdigest()[:16]


def _read_shard(path: Path, model: str) -> pd.DataFrame | None:
    try:
        return validate_task_records(pd.read_parquet(path), path)
    except Exception as exc:  # unreadable or not task records: redone
        log.warning("%s: shard unusable (%s); its units are judged again", path, exc)
        path.unlink(missing_ok=True)
        return None


@dataclass(frozen=True)
class _Finished:
    """The consolidated records of an earlier run of the same configuration, by unit, and the
    sha256 of the images they judged."""

    by_unit: Mapping[tuple[str, str], pd.DataFrame]
    shas: Mapping[str, str]


def _finished(out: Path, fp: Mapping[str, Any]) -> _Finished | None:
    """The records ``out`` holds for configuration ``fp`` (None when none or another's)."""
    try:
        old = json.loads((out / FINGERPRINT_FILE).read_text(encoding="utf-8")).get("sha256")
        if old != fp["sha256"]:
            return None
        rec = validate_task_records(pd.read_parquet(out / RECORDS_FILE), out / RECORDS_FILE)
        shas = json.loads((out / IMAGES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, StylisticBiasError):
        return None
    by_unit = {(str(u), str(i)): g for (u, i), g in rec.groupby(["unit", "image_ids"], sort=False)}
    return _Finished(by_unit, shas)


def _reuse(
    before: _Finished | None,
    batch: Sequence[Unit],
    tasks: Sequence[TaskScenario],
    benchmark: Benchmark,
) -> pd.DataFrame | None:
    """A batch's finished records from the earlier run when all of them are there, about the
    same image bytes; else None (the batch is judged)."""
    if before is None:
        return None
    rows = []
    for u in batch:
        if any(before.shas.get(f.image_id) != f.sha256 for f in u.faces):
            return None
        want = sum(
            len(task_of(sc).prompts(sc, benchmark)) for sc in tasks if asks_pair(sc) == u.pair
        )
        got = before.by_unit.get((u.unit, u.image_ids))
        got = got[got["task_id"].isin([t.id for t in tasks])] if got is not None else None
        if got is None or len(got) != want:
            return None
        rows.append(got)
    return pd.concat(rows, ignore_index=True) if rows else None


def missing_task_requests(
    config: Config, benchmark: Benchmark, model_cfg: Mapping[str, Any]
) -> tuple[Any, list[Any]]:
    """The model's engine (``openai``) and the API requests judging the protocol's faces still
    needs -- every task prompt of every single face and pair, as the judge stage asks them; the
    family's ``requests`` hook (``python -m stylisticbias.judge.batch export|import``)."""
    judge_cfg = asdict(config.judge)
    # the engine's binary prompts: none (judge.scenarios selects tasks here), as the stage's
    engine = make_engine(model_cfg, {**judge_cfg, "scenarios": "all"}, benchmark)
    tasks = selected_tasks(benchmark, judge_cfg.get("scenarios"))
    seed = int(next(iter(judge_cfg.get("seeds") or [1])))
    faces, by_image = load_faces(config, benchmark)
    singles, pairs = units_of(faces, by_image, read_sets(stage_path(config.paths, "faces")))
    cache = stage_path(config.paths, "judgments") / ".composites"
    name = str(model_cfg.get("name", ""))
    asks = [
        ask
        for units in (singles, pairs)
        for *_, ask in unit_asks(name, benchmark, tasks, units, seed, cache)[1]
    ]
    return engine, list(engine.missing_task_requests(asks))


def run_engine_task_judge(
    model_name: str,
    model_cfg: Mapping[str, Any],
    benchmark: Benchmark,
    config: Config,
    out: Path,
) -> Path:
    """Judge a task protocol with the model's engine (``hf``/``openai``); writes
    ``out/task_records.parquet`` (see the module doc)."""
    judge_cfg = asdict(config.judge)
    tasks = selected_tasks(benchmark, judge_cfg.get("scenarios"))
    seed = int(next(iter(judge_cfg.get("seeds") or [1])))
    faces, by_image = load_faces(config, benchmark)
    sets = read_sets(stage_path(config.paths, "faces"))
    singles, pairs = units_of(faces, by_image, sets)
    if any(asks_pair(t) for t in tasks) and not pairs:
        raise StylisticBiasError(
            f"{benchmark.name}: pairwise tasks need two edits of different groups of one source "
            f"photo; {len(by_image)} face(s) give none"
            if sets is not None
            else f"{benchmark.name}: pairwise tasks need cross-group faces in blocks of {BLOCK}; "
            f"{len(by_image)} face(s) give none (judge more faces: faces.n)"
        )
    if config.judge.dry_run:  # count what would be asked; nothing is sent or written
        n = sum(
            len(task_of(t).prompts(t, benchmark)) * len(pairs if asks_pair(t) else singles)
            for t in tasks
        )
        log.info(
            "%s: dry run: %d task prompt(s) over %d face(s) and %d pair(s); nothing asked",
            model_name,
            n,
            len(singles),
            len(pairs),
        )
        return out / RECORDS_FILE
    # the engine's binary prompts: none (judge.scenarios selects tasks here)
    engine = make_engine(model_cfg, {**judge_cfg, "scenarios": "all"}, benchmark)
    fp = fingerprint(model_cfg, judge_cfg, tasks, engine)
    cache = out.parent / ".composites"
    with OutputLock(project_root(), out):
        before = _finished(out, fp)
        switch_configuration(out, fp)
        shard_dir = out / "shards"
        shard_dir.mkdir(parents=True, exist_ok=True)
        parts = []
        batches = [singles[i : i + BATCH] for i in range(0, len(singles), BATCH)]
        batches += [pairs[i : i + BATCH] for i in range(0, len(pairs), BATCH)]
        done = judged_units = judged_prompts = 0
        t0 = time.perf_counter()
        ready: list[pd.DataFrame | None] = []
        for batch in batches:
            path = shard_dir / f"shard-{_shard_key(batch, tasks)}.parquet"
            got = _read_shard(path, model_name) if path.is_file() else None
            ready.append(got if got is not None else _reuse(before, batch, tasks, benchmark))
        batch_stats: dict[str, Any] = {}
        if hasattr(engine, "prefetch_tasks"):  # openai with endpoint.batch: jobs fill its cache
            asks = [
                ask
                for units, got in zip(batches, ready)
                if got is None
                for *_, ask in unit_asks(model_name, benchmark, tasks, units, seed, cache)[1]
            ]
            batch_stats = engine.prefetch_tasks(asks, out) or {}
        for batch, got in zip(batches, ready):
            path = shard_dir / f"shard-{_shard_key(batch, tasks)}.parquet"
            if got is None:
                got = judge_units(engine, benchmark, tasks, batch, seed, cache)
                with atomic_path(path) as tmp:
                    got.to_parquet(tmp, index=False)
                judged_units += len(batch)
                judged_prompts += len(got)
            else:
                done += 1
            parts.append(got)
        order = {t.id: i for i, t in enumerate(tasks)}
        df = pd.concat(parts, ignore_index=True)
        df = df.sort_values(
            ["task_id", "variant", "unit", "image_ids"],
            kind="stable",
            key=lambda c: c.map(order) if c.name == "task_id" else c,
        )
        df = validate_task_records(typed(df.reset_index(drop=True)), f"{model_name} task records")
        keep = (RECORDS_FILE, FINGERPRINT_FILE, IMAGES_FILE)
        for stale in out.iterdir():  # the directory holds this run's records only
            if stale.is_file() and stale.name not in keep:
                stale.unlink()
        path = out / RECORDS_FILE
        with atomic_path(path) as tmp:
            df.to_parquet(tmp, index=False)
        shas = {f.image_id: f.sha256 for f in by_image.values()}
        atomic_write_json(out / IMAGES_FILE, dict(sorted(shas.items())))
        shutil.rmtree(shard_dir, ignore_errors=True)
    seconds = time.perf_counter() - t0
    stats = engine.stats.as_dict() if hasattr(engine, "stats") else None
    if batch_stats:  # the lines of the batch jobs, besides the requests sent online
        stats = {
            **(stats or {}),
            **{k: v for k, v in batch_stats.items() if k.startswith("api_batch_")},
        }
    extra = {
        "batches": len(batches),
        "batches_resumed": done,
        "transport": stats,
        "engine_stats": [stats or {}],
    }
    jobs = batch_jobs(out)
    if jobs:
        extra["batch_jobs"] = jobs
    summary = task_summary(
        df,
        model_name,
        model_cfg,
        units_judged=judged_units,
        prompts_judged=judged_prompts,
        seconds=seconds,
        extra=extra,
    )
    params = (
        task_run_params(model_name, model_cfg, config.judge, [t.id for t in tasks], benchmark.name)
        | engine.run_params()
    )
    finish_task_run(out, summary, config.tracking, params)
    log.info(
        "%s: %d task records (%d tasks, %d of %d batches resumed) -> %s",
        model_name,
        len(df),
        df["task_id"].nunique(),
        done,
        len(batches),
        path,
    )
    return path


def judge_task_protocol(
    model_name: str, model_cfg: Mapping[str, Any], benchmark: Benchmark, config: Config, out: Path
) -> Path:
    """The judge stage of a task protocol: the model's engine must judge every task the
    protocol asks (one line naming the task, the engine and the valid choices otherwise, before
    anything is touched); the simulated judge answers from planted effects
    (:func:`~stylisticbias.families.tasks.judge.run.run_task_judge`), ``hf`` and ``openai`` through
    :func:`run_engine_task_judge`."""
    engine = str((model_cfg.get("engine") or {}).get("name") or "")
    check_engine_tasks(benchmark, engine, f"models.{model_name}", model_cfg, config.judge.scenarios)
    if engine == "simulated":
        faces_dir = stage_path(config.paths, "faces")
        picked = tuple(selected_tasks(benchmark, config.judge.scenarios))
        if picked != benchmark.tasks:  # judge.scenarios: a subset of the tasks
            benchmark = dataclasses.replace(benchmark, tasks=picked)
        t0 = time.perf_counter()
        path = run_task_judge(model_name, dict(model_cfg), benchmark, faces_dir, out)
        seconds = time.perf_counter() - t0
        df = pd.read_parquet(path)
        summary = task_summary(
            df,
            model_name,
            model_cfg,
            units_judged=int(df["unit"].nunique()),
            prompts_judged=len(df),
            seconds=seconds,
        )
        params = task_run_params(
            model_name, model_cfg, config.judge, [t.id for t in benchmark.tasks], benchmark.name
        )
        finish_task_run(out, summary, config.tracking, params)
        return path
    return run_engine_task_judge(model_name, model_cfg, benchmark, config, out)
