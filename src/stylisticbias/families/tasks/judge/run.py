"""The judge stage for task protocols (``tasks:`` without ``scenarios:``, e.g. REFLECT,
VIGNETTE): every task prompt asked of the protocol's faces, written as task records
(:mod:`~stylisticbias.judge.protocol.tasks.records`).

Units (:func:`task_units`): every face of ``faces.parquet`` with status ok for single-image
tasks. For pairwise tasks, when the faces are counterfactual sets (``counterfactuals.parquet``
beside them: REFLECT's edits of one source photo,
:mod:`~stylisticbias.dataset.counterfactual_sets`), every cross-group pair of two edits of one
source is asked in both orders, and the source photo is the records' ``unit`` for every task
(single edits included): the sampling unit the task tables bootstrap and cluster on. Without
sets (VIGNETTE: two different people) the faces are taken in ``face_id`` order in blocks of
four (an *instance*) and every cross-group pair of a block is asked in both orders; each face
is its own unit. The simulated judge does not look at pixels.

This is the ``simulated`` engine's route (it answers from planted effects,
:mod:`~stylisticbias.families.tasks.judge.plants`, and gives the exact outcome
distribution in closed form); ``hf`` and ``openai`` judge the same units through
:mod:`~stylisticbias.families.tasks.judge.judging`, which dispatches here for the simulated judge.
"""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.benchmark import Benchmark, TaskScenario
from stylisticbias.dataset.counterfactual_sets import read_sets
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.judge.plants import face_group, plant_for
from stylisticbias.judge.engines.simulated.tasks import (
    choice_k_probs,
    factuality_option_probs,
    pairwise_first_prob,
    simulate_answers,
)
from stylisticbias.judge.protocol.tasks.capabilities import asks_pair
from stylisticbias.judge.protocol.tasks.factuality import ABOUT, option_outcomes
from stylisticbias.judge.protocol.tasks.records import (
    RECORDS_FILE,
    positions,
    validate_task_records,
)
from stylisticbias.judge.protocol.tasks.registry import task_of
from stylisticbias.outputs import atomic_path
from stylisticbias.schemas import FACES, read_table

log = logging.getLogger(__name__)
BLOCK = 4


def _answers_type(sc: TaskScenario) -> str:
    return sc.answers if sc.task == "text_only" else sc.task


def exact_dist(
    sc: TaskScenario, benchmark: Benchmark, groups: tuple[str, ...], variant: int
) -> str:
    """JSON of the simulated judge's exact outcome probabilities ('' for a free number)."""
    plant = plant_for(sc)
    inv = plant.invalid_rate
    kind = _answers_type(sc)
    if kind == "choice_k":
        base = plant.base or (1.0,) * len(sc.options)
        p = choice_k_probs(base, plant.effect(groups[0]))
        dist = {o.label: (1 - inv) * float(q) for o, q in zip(sc.options, p)}
    elif kind == "pairwise":
        p1 = pairwise_first_prob(plant, groups[0], groups[1], variant)
        dist = {"first": (1 - inv) * p1, "second": (1 - inv) * (1 - p1)}
    elif kind == "factuality":
        task = task_of(sc)
        prompt = task.prompts(sc, benchmark)[variant]
        roles = option_outcomes(sc, prompt)
        about = groups[ABOUT.index(dict(sc.fields)["about"])]
        dist = {o: 0.0 for o in task.outcomes(sc, benchmark) if o != "invalid"}
        for role, q in zip(roles, factuality_option_probs(plant, about, roles)):
            dist[role] += (1 - inv) * float(q)
    else:
        return ""
    dist["invalid"] = inv
    return json.dumps(dist, sort_keys=True)


def task_units(
    faces: pd.DataFrame, sets: pd.DataFrame | None = None
) -> tuple[list[tuple[str, str, str, str]], list[Any]]:
    """Single-image units ``(face_id, image_id, group, unit)`` and pair units
    ``(unit, (image_a, image_b), (group_a, group_b))`` (see the module doc: with counterfactual
    ``sets`` the unit is the source photo, pairs are two edits of one source)."""
    ok = faces[faces["status"] == "ok"].sort_values("face_id")
    source = {} if sets is None else dict(zip(sets["image_id"], sets["source_id"]))
    stray = [] if sets is None else sorted(set(ok["image_id"]) - set(source))
    if stray:
        raise StylisticBiasError(
            f"faces.parquet lists {len(stray)} image(s) that counterfactuals.parquet does not "
            f"(first: {stray[0]}); the two are written together: re-run the faces stage"
        )
    singles = [
        (
            str(r.face_id),
            str(r.image_id),
            face_group(str(r.ethnicity), str(r.gender)),
            str(source.get(str(r.image_id), r.face_id)),
        )
        for r in ok.itertuples(index=False)
    ]
    if sets is not None:
        singles.sort(key=lambda s: (s[3], s[0]))
        blocks = [list(b) for _, b in itertools.groupby(singles, key=lambda s: s[3])]
        labels = [b[0][3] for b in blocks]
    else:
        blocks = [singles[b * BLOCK : (b + 1) * BLOCK] for b in range(len(singles) // BLOCK)]
        labels = [f"inst{b:03d}" for b in range(len(blocks))]
    pairs = []
    for label, block in zip(labels, blocks):
        for x, y in itertools.combinations(block, 2):
            if x[2] != y[2]:
                pairs.append((label, (x[1], y[1]), (x[2], y[2])))
    return singles, pairs


def task_records(
    benchmark: Benchmark,
    faces: pd.DataFrame,
    model: str,
    seed: int,
    sets: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every task prompt of ``benchmark`` answered by the simulated judge (the records);
    ``sets``: the faces' counterfactual table, if any (:func:`task_units`)."""
    singles, pairs = task_units(faces, sets)
    rows: list[dict[str, Any]] = []
    for sc in benchmark.tasks:
        task = task_of(sc)
        paired = asks_pair(sc)
        if paired and not pairs:
            raise StylisticBiasError(
                f"task {sc.id}: no cross-group pair of faces "
                + (
                    "within a source photo's edits; each source needs edits of two groups"
                    if sets is not None
                    else f"in blocks of {BLOCK}; judge more faces (faces.n)"
                )
            )
        if paired:
            units = [f"{u}|{a}|{b}" for u, (a, b), _ in pairs]
            groups = [g for _, _, g in pairs]
            ids = ["|".join(i) for _, i, _ in pairs]
            insts = [u for u, _, _ in pairs]
        else:
            units = [f for f, _, _, _ in singles]
            groups = [(g,) for _, _, g, _ in singles]
            ids = [i for _, i, _, _ in singles]
            insts = [u for _, _, _, u in singles]
        dists: dict[tuple[tuple[str, ...], int], str] = {}  # per (groups, variant): a few
        for prompt in task.prompts(sc, benchmark):
            answers = simulate_answers(benchmark, sc, prompt, plant_for(sc), units, groups, seed)
            for inst, iid, g, (text, ans) in zip(insts, ids, groups, answers):
                key = (tuple(g), int(prompt.variant))
                if key not in dists:
                    dists[key] = exact_dist(sc, benchmark, *key)
                rows.append(
                    {
                        "model": model,
                        "task_id": int(sc.id),
                        "task": sc.task,
                        "answers": _answers_type(sc),
                        "variant": int(prompt.variant),
                        "unit": inst,
                        "image_ids": iid,
                        "first": g[0],
                        "second": g[1] if len(g) > 1 else "",
                        "response": text,
                        "outcome": ans.outcome,
                        "value": float(ans.value)
                        if ans.valid and ans.value is not None and _answers_type(sc) == "numeric"
                        else float("nan"),
                        "dist": dists[key],
                        "reason": ans.reason or "",
                        "undecided": 0.0,
                        **positions(iid.split("|") if paired else [iid], prompt),
                    }
                )
    df = pd.DataFrame(rows)
    df["task_id"] = df["task_id"].astype("int64")
    df["variant"] = df["variant"].astype("int64")
    df["value"] = df["value"].astype("float64")
    return validate_task_records(df, f"{model} task records")


def run_task_judge(
    model_name: str, model_cfg: dict[str, Any], benchmark: Benchmark, faces_dir: Path, out: Path
) -> Path:
    """Judge a task protocol with the simulated engine; writes ``out/task_records.parquet``."""
    engine = str((model_cfg.get("engine") or {}).get("name", ""))
    if engine != "simulated":
        raise StylisticBiasError(
            f"models.{model_name}: engine {engine!r} cannot judge the task protocol "
            f"{benchmark.name}; engines that can: simulated"
        )
    faces = read_table(faces_dir / "faces.parquet", FACES)
    sets = read_sets(faces_dir)
    df = task_records(benchmark, faces, model_name, int(model_cfg.get("seed", 0)), sets)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.iterdir():  # the directory holds this run's records only
        if stale.is_file() and stale.name != RECORDS_FILE:
            stale.unlink()
    path = out / RECORDS_FILE
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
    log.info(
        "%s: %d task records (%d tasks) -> %s", model_name, len(df), df["task_id"].nunique(), path
    )
    return path
