"""A task prompt's system message through the openai engine: the request body carries it as a
``system`` message before the user turn (plain text), the loopback server receives it (its log
names the system text); an ask without one sends the body as
before (one user message), so protocols without a system message judge exactly as they did."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from servers import events, free_port, start_loopback, stop

from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import load_group_option
from stylisticbias.judge.engines.openai.engine import OpenAIJudgeEngine
from stylisticbias.judge.engines.openai.requests import encode_image
from stylisticbias.judge.protocol.tasks.asks import TaskAsk
from stylisticbias.judge.protocol.tasks.registry import task_of

ROOT = Path(__file__).resolve().parents[4]
TASKS = ROOT / "tests" / "data" / "protocols" / "tasks.yaml"
MODEL = "tiny-llava-next-vllm"
SYSTEM = "You are a helpful assistant. Follow the instructions and help the user with the task."
PROBS = {"A": 0.2, "B": 0.5, "C": 0.1, "D": 0.1, "E": 0.05, "F": 0.05}
PLANTED = {"": [[t, math.log(p)] for t, p in PROBS.items()], "*": [["</s>", 0.0]]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("system")
    port = free_port()
    proc = start_loopback(
        port, faults={"planted_logprobs": PLANTED}, log=d / "log.jsonl", with_model=False
    )
    saved = os.environ.get("STYLISTICBIAS_LOOPBACK_URL")
    os.environ["STYLISTICBIAS_LOOPBACK_URL"] = f"http://127.0.0.1:{port}/v1"
    yield d
    stop(proc)
    if saved is None:
        os.environ.pop("STYLISTICBIAS_LOOPBACK_URL", None)
    else:
        os.environ["STYLISTICBIAS_LOOPBACK_URL"] = saved


def _engine(tmp: Path, decoding: str) -> OpenAIJudgeEngine:
    eng = {
        **load_group_option("engine", "openai"),
        "decoding": decoding,
        "cache": str(tmp / f"{decoding}.sqlite"),
        "progress": False,
        "top_logprobs": 20,
    }
    judge = {
        "orderings": [1],
        "seeds": [1],
        "scenarios": [7],
        "temperature": 1.0,
        "max_new_tokens": 4,
    }
    return OpenAIJudgeEngine(load_group_option("model", MODEL), eng, judge, load_benchmark(TASKS))


def _image(tmp: Path) -> Path:
    path = tmp / "img.png"
    Image.fromarray((np.random.RandomState(0).rand(32, 32, 3) * 255).astype("uint8")).save(path)
    return path


def test_request_body_carries_the_system_message(tmp_path: Path) -> None:
    api = _engine(tmp_path, "exact")
    img = encode_image(_image(tmp_path))
    with_sys = api.builder.generate_images([img], "Question?", 1, SYSTEM).body["messages"]
    assert with_sys[0] == {"role": "system", "content": SYSTEM}
    assert with_sys[1]["role"] == "user"
    assert [p["type"] for p in with_sys[1]["content"]] == ["image_url", "text"]
    two = api.builder.logprobs_images([img, img], "Question?", "", 5, system=SYSTEM).body
    assert two["messages"][0] == {"role": "system", "content": SYSTEM}
    assert [p["type"] for p in two["messages"][1]["content"]] == ["image_url"] * 2 + ["text"]
    # without one: the body as before the option existed (one user turn), another cache key
    plain = api.builder.generate_images([img], "Question?", 1)
    assert [m["role"] for m in plain.body["messages"]] == ["user"]
    assert plain.body == api.builder.generate_images([img], "Question?", 1, "").body
    assert plain.key != api.builder.generate_images([img], "Question?", 1, SYSTEM).key


def test_the_server_receives_the_system_turn(server: Path, tmp_path: Path) -> None:
    api = _engine(tmp_path, "exact")
    bench = api.benchmark
    sc = bench.task_scenario(101)  # choice_k, six labels
    (prompt,) = task_of(sc).prompts(sc, bench)
    img = str(_image(tmp_path))
    rules = task_of(sc).rules(sc, bench)
    asks = [
        TaskAsk(f"k{i}", prompt.text, (img,), rules, 1, system)
        for i, system in enumerate((SYSTEM, ""))
    ]
    seen = len(events(server / "log.jsonl"))
    replies = api.answer_tasks(asks)
    got = events(server / "log.jsonl")[seen:]
    # every request of the exact expansion carries its ask's system turn (or none)
    assert len(got) >= 2 and {e["system"] for e in got} == {SYSTEM, ""}
    for r in replies:  # the planted table reaches both asks
        assert r.mass is not None and r.mass["b"] == pytest.approx(PROBS["B"], abs=1e-9)


def test_protocols_without_a_system_message_hash_and_ask_as_before() -> None:
    """A task without ``system:`` keeps the judge fingerprint it had before the key existed
    (no resumed run is invalidated) and asks with no system turn."""
    from dataclasses import asdict

    from stylisticbias.families.tasks.judge.judging import fingerprint

    reflect = load_benchmark("reflect")
    assert {t.system for t in reflect.tasks} == {""}
    fp = fingerprint({"engine": {"name": "openai"}}, {}, reflect.tasks, object())
    before = [{k: v for k, v in asdict(t).items() if k != "system"} for t in reflect.tasks]
    assert fp["config"]["tasks"] == json.loads(json.dumps(before, default=str))
    vignette = load_benchmark("vignette")
    fp2 = fingerprint({"engine": {"name": "openai"}}, {}, vignette.tasks[:1], object())
    assert fp2["config"]["tasks"][0]["system"] == SYSTEM
