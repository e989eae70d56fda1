"""Task protocols judged through the judge stage by the ``openai`` engine, against the loopback
server with planted answers (no checkpoint loaded, so it is fast):

* ``sampled``: the label tasks (REFLECT's 2AFC with two image inputs, its salary MCQ) get their
  exact distribution from planted top log-probabilities -- reproduced to 1e-9 in the records --
  and the salary recommendation (a free number) is generated: planted written amounts, a range,
  an amount outside the plausible range and a refusal, each read by the numeric parser;
* ``generate``: every task's planted answer text is parsed, a ``choice_k`` answer outside the
  labels, two labels and a pairwise answer in both orders included;
* a rerun sends no request and writes the same bytes; bad input is invalid with its reason.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from servers import events, free_port, start_loopback, stop
from task_project import task_project

from stylisticbias.benchmark import load_benchmark
from stylisticbias.judge.run import run_judge
from stylisticbias.spec.parse import config_from_params

MODEL = "tiny-llava-next-vllm"
PROBS = {"A": 0.05, "B": 0.15, "C": 0.3, "D": 0.2, "E": 0.12, "F": 0.08, "maybe": 0.06, "G": 0.04}
PLANTED_LOGPROBS = {"": [[t, math.log(p)] for t, p in PROBS.items()], "*": [["</s>", 0.0]]}
SALARY = "recommend an annual salary"
NUMBERS = ["$85,000", "Between $50k and $60k.", "$5", None]  # None: a refusal
MCQ = "What is this person's annual salary?"
LETTERS = ["G", "C", "C or D", "c"]


def _shas(root: Path) -> list[str]:
    faces = pd.read_parquet(root / "faces" / "faces.parquet").sort_values("face_id")
    return list(faces["sha256"])


def _planted(shas: list[str], generate: bool) -> list[dict[str, Any]]:
    out = []
    for sha, number in zip(shas, NUMBERS):
        out.append(
            {
                "image": sha,
                "contains": SALARY,
                **({"content": number} if number else {"refusal": "I can't estimate salaries."}),
            }
        )
    if generate:
        out += [{"image": s, "contains": MCQ, "content": x} for s, x in zip(shas, LETTERS)]
        out += [{"image": s, "contains": "Which version", "content": "A"} for s in shas]
    return out


def _run(
    tmp: Path,
    decoding: str,
    generate: bool,
    experiment: str = "reflect-demo",
    tasks: str = "[1,11,21]",
) -> tuple[Path, Any, dict[str, Any]]:
    """The server (planted answers keyed by the faces' sha256) and the project's params."""
    root = tmp / "proj"
    root.mkdir()
    task_project(root, experiment, "simulated-strong", 4)  # the faces first: their sha256
    port = free_port()
    log = tmp / "server.jsonl"
    faults = {"planted": _planted(_shas(root), generate), "planted_logprobs": PLANTED_LOGPROBS}
    proc = start_loopback(port, faults=faults, log=log, with_model=False)
    os.environ["STYLISTICBIAS_LOOPBACK_URL"] = f"http://127.0.0.1:{port}/v1"
    params = task_project(
        root,
        experiment,
        MODEL,
        4,
        [
            f"judge.scenarios={tasks}",
            "judge.temperature=1.0",
            f"models.{MODEL}.engine.decoding={decoding}",
            f"models.{MODEL}.engine.cache={tmp / 'cache.sqlite'}",
            f"models.{MODEL}.engine.progress=false",
        ],
    )
    return log, proc, params


@pytest.fixture
def loopback_env() -> Any:
    saved = os.environ.get("STYLISTICBIAS_LOOPBACK_URL")
    procs: list[Any] = []
    yield procs
    for p in procs:
        stop(p)
    if saved is None:
        os.environ.pop("STYLISTICBIAS_LOOPBACK_URL", None)
    else:
        os.environ["STYLISTICBIAS_LOOPBACK_URL"] = saved


def test_sampled_reflect_exact_labels_and_generated_numbers(tmp_path: Path, loopback_env) -> None:
    log, proc, params = _run(tmp_path, "sampled", generate=False)
    loopback_env.append(proc)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    rec = pd.read_parquet(out)
    # 6 cross-group pairs x 2 orders (2AFC), 4 faces (MCQ), 4 faces (salary)
    assert rec.groupby("task_id").size().to_dict() == {1: 12, 11: 4, 21: 4}
    bench = load_benchmark("reflect")
    # MCQ: the planted option probabilities, every option; the hedge and G invalid
    for d in rec.loc[rec["task_id"] == 11, "dist"]:
        dist = json.loads(d)
        assert list(dist) == [*bench.task_scenario(11).labels, "invalid"]
        for label in "abcdef":
            assert dist[label] == pytest.approx(PROBS[label.upper()], abs=1e-9)
        assert dist["invalid"] == pytest.approx(PROBS["maybe"] + PROBS["G"], abs=1e-9)
    # 2AFC: label A is slot 1 -- `first` in order 0, `second` in order 1 (the swap)
    pair = rec[rec["task_id"] == 1]
    for variant, dist in zip(pair["variant"], pair["dist"]):
        d = json.loads(dist)
        a, b = PROBS["A"], PROBS["B"]
        assert d["first"] == pytest.approx(a if variant == 0 else b, abs=1e-9)
        assert d["second"] == pytest.approx(b if variant == 0 else a, abs=1e-9)
        assert d["invalid"] == pytest.approx(1 - a - b, abs=1e-9)
    assert (pair["undecided"] == 0).all()
    # the answer is a draw from its distribution: its outcome is one of the distribution's
    assert set(pair["outcome"]) <= {"first", "second", "invalid"}
    assert (rec.loc[rec["outcome"] == "invalid", "reason"] != "").all()
    # two images reached the server in every 2AFC request
    seen = [e for e in events(log) if e["event"] == "answered"]
    assert {e["images"] for e in seen} == {1, 2}
    # salary: generated and parsed; a range is its midpoint; out of range and refusal invalid
    num = rec[rec["task_id"] == 21].sort_values("unit")
    assert list(num["value"].iloc[:2]) == [85000.0, 55000.0]
    assert (num["dist"] == "").all()
    assert list(num["outcome"]) == ["value", "value", "invalid", "invalid"]
    assert "range" in num["reason"].iloc[2]
    assert "refused" in num["reason"].iloc[3] and "salaries" in num["reason"].iloc[3]
    # a rerun: every batch resumed, no request, the same bytes
    before = out.read_bytes()
    n_events = len(events(log))
    again = run_judge(MODEL, config_from_params(params), progress=False)
    assert again.read_bytes() == before and len(events(log)) == n_events
    run = json.loads((out.parent.parent / f"{out.parent.name}.run.json").read_text())
    assert run["batches_resumed"] == run["batches"]


def test_generate_reflect_every_answer_parsed(tmp_path: Path, loopback_env) -> None:
    log, proc, params = _run(tmp_path, "generate", generate=True)
    loopback_env.append(proc)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    rec = pd.read_parquet(out)
    assert (rec["dist"] == "").all()  # generated: no exact distribution
    mcq = rec[rec["task_id"] == 11].sort_values("unit")
    assert list(mcq["outcome"]) == ["invalid", "c", "invalid", "c"]
    assert "g" in mcq["reason"].iloc[0].lower()  # a label outside the options, named
    assert mcq["reason"].iloc[2] != "" and mcq["reason"].iloc[1] == ""
    # "A" is slot 1: the pair's first identity in order 0, its second in order 1
    pair = rec[rec["task_id"] == 1]
    assert set(pair.loc[pair["variant"] == 0, "outcome"]) == {"first"}
    assert set(pair.loc[pair["variant"] == 1, "outcome"]) == {"second"}
    answered = [e for e in events(log) if e["event"] == "answered"]
    assert max(e["images"] for e in answered) == 2


def test_vignette_composite_and_text_only(tmp_path: Path, loopback_env) -> None:
    """A composite is one image (slot 1 on the left) and a text-only prompt none; both orders;
    a pair unit short of an image is recorded invalid with the reason and never sent."""
    from stylisticbias.families.tasks.judge.judging import Unit, judge_units, load_faces, units_of
    from stylisticbias.judge.engines.factory import make_engine

    log, proc, params = _run(tmp_path, "sampled", False, "vignette-demo", "[101,4021]")
    loopback_env.append(proc)
    config = config_from_params(params)
    out = run_judge(MODEL, config, progress=False)
    rec = pd.read_parquet(out)
    assert rec.groupby(["task_id", "variant"]).size().to_dict() == {
        (101, 0): 6,
        (101, 1): 6,
        (4021, 0): 6,
        (4021, 1): 6,
    }  # 6 cross-group pairs of 4 faces (4 groups)
    assert (rec["task"] == "text_only").sum() == 12 and set(rec["answers"]) == {"pairwise"}
    for variant, dist in zip(rec["variant"], rec["dist"]):
        d = json.loads(dist)  # label A names the left (first) person in order 0
        assert d["first"] == pytest.approx(PROBS["A" if variant == 0 else "B"], abs=1e-9)
    assert {e["images"] for e in events(log) if e["event"] == "answered"} == {0, 1}
    composites = sorted((out.parent.parent / ".composites").glob("*.png"))
    assert len(composites) == 12  # one per pair and order (the left person differs)
    # every record names its left image; the swapped order mirrors it
    pair = rec[rec["task_id"] == 101]
    first_id = pair["image_ids"].str.split("|").str[0]
    assert ((pair["left_id"] == first_id) == (pair["variant"] == 0)).all()
    # a rerun reuses every cached composite (none rewritten)
    stamps = {p: p.stat().st_mtime_ns for p in composites}
    vb = load_benchmark("vignette")
    engine0 = make_engine(params["models"][MODEL], {**params["judge"], "scenarios": "all"}, vb)
    faces0, by_image0 = load_faces(config, vb)
    judge_units(
        engine0,
        vb,
        [vb.task_scenario(101)],
        units_of(faces0, by_image0)[1],
        1,
        out.parent.parent / ".composites",
    )
    assert {p: p.stat().st_mtime_ns for p in composites} == stamps
    # bad input: a pair unit with one image -> invalid with its reason, no request
    bench = load_benchmark("vignette")
    faces, by_image = load_faces(config, bench)
    _, pairs = units_of(faces, by_image)
    short = Unit(pairs[0].unit, pairs[0].faces[:1], pair=True)
    n = len(events(log))
    engine = make_engine(params["models"][MODEL], {**params["judge"], "scenarios": "all"}, bench)
    got = judge_units(engine, bench, [bench.task_scenario(101)], [short], 1, tmp_path / "c")
    assert list(got["outcome"]) == ["invalid", "invalid"] and len(events(log)) == n
    assert "needs 2 image(s) (one per identity), got 1" in got["reason"].iloc[0]
