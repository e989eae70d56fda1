"""k-option distributions through the openai engine against the loopback server with planted
log-probabilities: the server answers the first token from a planted table over the six
REFLECT salary labels (plus a hedge token and a label outside the options) and then end of
sequence, so the exact distribution is known in closed form; the engine must reproduce every
option's probability to 1e-9, put the hedge and the outside label on ``invalid``, and with a
top-k smaller than the table keep the unseen mass undecided (never overstating an option).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from servers import free_port, start_loopback, stop

from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import load_group_option
from stylisticbias.judge.engines.openai.engine import OpenAIJudgeEngine
from stylisticbias.judge.engines.openai.requests import encode_image
from stylisticbias.judge.engines.openai.tasks import run_label_distributions
from stylisticbias.judge.protocol.tasks.registry import task_of

ROOT = Path(__file__).resolve().parents[4]
TASKS = ROOT / "tests" / "data" / "protocols" / "tasks.yaml"
MODEL = "tiny-llava-next-vllm"
PROBS = {"A": 0.05, "B": 0.15, "C": 0.3, "D": 0.2, "E": 0.12, "F": 0.08, "maybe": 0.06, "G": 0.04}
PLANTED = {
    "": [[t, math.log(p)] for t, p in PROBS.items()],
    "*": [["</s>", 0.0]],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("planted")
    port = free_port()
    # every answer is planted: no checkpoint loaded
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


def _engine(tmp: Path, top_logprobs: int) -> OpenAIJudgeEngine:
    eng = {
        **load_group_option("engine", "openai"),
        "decoding": "exact",
        "cache": str(tmp / f"c{top_logprobs}.sqlite"),
        "progress": False,
        "top_logprobs": top_logprobs,
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
    rs = np.random.RandomState(0)
    Image.fromarray((rs.rand(32, 32, 3) * 255).astype("uint8")).save(path)
    return path


def test_planted_k_option_logprobs_reproduced(server: Path, tmp_path: Path) -> None:
    api = _engine(tmp_path, 20)
    bench = api.benchmark
    sc = bench.task_scenario(101)
    task = task_of(sc)
    (prompt,) = task.prompts(sc, bench)
    (d,) = api.label_distributions(str(_image(tmp_path)), [prompt.text], task.rules(sc, bench))
    for label in "abcdef":
        assert d.mass[label] == pytest.approx(PROBS[label.upper()], abs=1e-9)
    assert d.mass["invalid"] == pytest.approx(PROBS["maybe"] + PROBS["G"], abs=1e-9)
    assert d.undecided == pytest.approx(0.0, abs=1e-9)
    out = task.distribution(d.mass, sc, prompt, bench)
    assert list(out) == ["a", "b", "c", "d", "e", "f", "invalid"]


def test_top_k_below_the_table_keeps_unseen_mass_undecided(server: Path, tmp_path: Path) -> None:
    api = _engine(tmp_path, 3)
    bench = api.benchmark
    sc = bench.task_scenario(101)
    task = task_of(sc)
    (prompt,) = task.prompts(sc, bench)
    img = encode_image(_image(tmp_path))
    (d,) = run_label_distributions(api, img, [prompt.text], task.rules(sc, bench))
    shown = {"c", "d", "b"}  # the three most probable
    for label in "abcdef":
        want = PROBS[label.upper()] if label in shown else 0.0
        assert d.mass[label] == pytest.approx(want, abs=1e-9)
    assert d.undecided == pytest.approx(1 - 0.3 - 0.2 - 0.15, abs=1e-9)


def test_two_image_request_reaches_the_server_with_two_images(server: Path, tmp_path: Path) -> None:
    from servers import events

    api = _engine(tmp_path, 20)
    bench = api.benchmark
    sc = bench.task_scenario(102)
    task = task_of(sc)
    p0, _ = task.prompts(sc, bench)
    first = _image(tmp_path)
    second = tmp_path / "second.png"
    Image.new("RGB", (32, 32), "blue").save(second)
    seen = len([e for e in events(server / "log.jsonl") if e["event"] == "answered"])
    (d,) = api.label_distributions([str(first), str(second)], [p0.text], task.rules(sc, bench))
    # the planted table's "A" and "B" are the two labels; the rest is invalid
    assert d.mass["a"] == pytest.approx(PROBS["A"], abs=1e-9)
    assert d.mass["b"] == pytest.approx(PROBS["B"], abs=1e-9)
    assert d.mass["invalid"] == pytest.approx(1 - PROBS["A"] - PROBS["B"], abs=1e-9)
    answered = [e for e in events(server / "log.jsonl") if e["event"] == "answered"]
    assert answered[seen:] and {e["images"] for e in answered[seen:]} == {2}
    # one request per image set: the same two images in the other order are another request
    req0 = api.builder.logprobs_images([encode_image(first), encode_image(second)], "q", "", 5)
    req1 = api.builder.logprobs_images([encode_image(second), encode_image(first)], "q", "", 5)
    assert req0.key != req1.key
    urls = [
        p["image_url"]["url"]
        for p in req0.body["messages"][0]["content"]
        if p.get("type") == "image_url"
    ]
    assert urls == [encode_image(first).data_url, encode_image(second).data_url]
