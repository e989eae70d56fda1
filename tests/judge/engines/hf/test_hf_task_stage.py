"""Task protocols judged through the judge stage by the ``hf`` engine on the tiny LLaVA-NeXT
checkpoint (random weights: its answers are ``(a)``/``(b)`` by construction).

REFLECT (``sampled``): the 2AFC with two image inputs and the salary MCQ get exact
distributions -- each record's equals the engine's own expansion of the same prompt and images,
and the swap maps labels to identities -- and the salary recommendation is generated and read
by the numeric parser (the tiny model writes no number: invalid, with the reason). VIGNETTE
(``exact``): a composite and a text-only question. A rerun judges nothing. These load a model
and expand dozens of prompts on the CPU: slow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from task_project import task_project

from stylisticbias.benchmark import load_benchmark
from stylisticbias.judge.run import run_judge
from stylisticbias.spec.parse import config_from_params
from stylisticbias_dev import tiny

ROOT = Path(__file__).resolve().parents[4]
MODEL = "tiny-llava-next"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        tiny.missing_requirement("llava_next") is not None,
        reason="llava_next processor requirement missing",
    ),
]


def _params(root: Path, experiment: str, overrides: list[str]) -> dict:
    path = tiny.ensure_built("llava_next", ROOT / "tests" / ".tiny_models" / "llava_next")
    return task_project(
        root,
        experiment,
        MODEL,
        4,
        [
            f"models.{MODEL}.hub_id={path}",
            f"models.{MODEL}.engine.device=cpu",
            f"models.{MODEL}.engine.prune_threshold=1e-6",
            "judge.max_new_tokens=6",
            *overrides,
        ],
    )


def test_reflect_through_the_judge_stage(tmp_path: Path) -> None:
    from stylisticbias.judge.engines.factory import make_engine
    from stylisticbias.judge.protocol.tasks.pairwise import SLOTS
    from stylisticbias.judge.protocol.tasks.registry import task_of

    params = _params(
        tmp_path,
        "reflect-demo",
        ["judge.scenarios=[1,11,21]", f"models.{MODEL}.engine.decoding=sampled"],
    )
    out = run_judge(MODEL, config_from_params(params), progress=False)
    rec = pd.read_parquet(out)
    assert rec.groupby("task_id").size().to_dict() == {1: 12, 11: 4, 21: 4}
    bench = load_benchmark("reflect")
    engine = make_engine(params["models"][MODEL], {**params["judge"], "scenarios": "all"}, bench)
    faces = pd.read_parquet(tmp_path / "faces" / "faces.parquet").set_index("image_id")
    path = {i: str(tmp_path / "faces" / p) for i, p in faces["path"].items()}
    # a 2AFC record: the two images in slot order, its exact masses the engine's expansion's
    sc = bench.task_scenario(1)
    task = task_of(sc)
    row = rec[(rec["task_id"] == 1) & (rec["variant"] == 1)].iloc[0]
    prompt = task.prompts(sc, bench)[1]
    by = dict(zip(("first", "second"), row["image_ids"].split("|")))
    imgs = [path[by[s]] for s in SLOTS[1]]
    (reply,) = engine.answer_tasks([_ask(prompt.text, imgs, task.rules(sc, bench))])
    dist = json.loads(row["dist"])
    assert dist["second"] == pytest.approx(reply.mass["a"], abs=1e-9)  # label A = slot 1
    assert dist["first"] == pytest.approx(reply.mass["b"], abs=1e-9)
    assert abs(dist["first"] - 0.5) > 1e-3  # the model sees the images: not a coin
    # the drawn answer's text names the label its outcome stands for under the order
    for _, r in rec[rec["task_id"] == 1].iterrows():
        if r["outcome"] != "invalid":
            label = "a" if "a" in r["response"].lower() else "b"
            assert SLOTS[int(r["variant"])][("a", "b").index(label)] == r["outcome"]
    # MCQ: a distribution over all six options
    for d in rec.loc[rec["task_id"] == 11, "dist"]:
        assert list(json.loads(d)) == ["a", "b", "c", "d", "e", "f", "invalid"]
    # salary: generated, no distribution; no number written -> invalid with the reason
    num = rec[rec["task_id"] == 21]
    assert (num["dist"] == "").all()
    assert ((num["outcome"] == "value") | (num["reason"] != "")).all()
    # a rerun judges nothing and writes the same bytes
    before = out.read_bytes()
    run_judge(MODEL, config_from_params(params), progress=False)
    assert out.read_bytes() == before
    run = json.loads((out.parent.parent / f"{out.parent.name}.run.json").read_text())
    assert run["batches_resumed"] == run["batches"]


def _ask(text: str, images: list[str], rules: object) -> object:
    from stylisticbias.judge.protocol.tasks.asks import TaskAsk

    return TaskAsk("check", text, tuple(images), rules, 1)  # type: ignore[arg-type]


def test_vignette_composite_and_text_only(tmp_path: Path) -> None:
    params = _params(tmp_path, "vignette-demo", ["judge.scenarios=[101,4021]"])
    out = run_judge(MODEL, config_from_params(params), progress=False)
    rec = pd.read_parquet(out)
    assert rec.groupby(["task_id", "variant"]).size().to_dict() == {
        (101, 0): 6,
        (101, 1): 6,
        (4021, 0): 6,
        (4021, 1): 6,
    }
    for d in rec["dist"]:
        assert set(json.loads(d)) == {"first", "second", "invalid"}
    composites = list((out.parent.parent / ".composites").glob("*.png"))  # shared by models
    assert len(composites) == 12
