"""A task prompt's system message through the hf engine: on a tiny checkpoint whose chat
template has a system role (Qwen3-VL's) the prompt the engine renders holds it as the system
turn, exact and generated asks alike; a template without one (it raises on the role) gets it
prepended to the user text with one logged note; an ask without one renders as before."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from PIL import Image

from stylisticbias.benchmark import load_benchmark
from stylisticbias.judge.engines.hf import tasks as hf_tasks
from stylisticbias.judge.engines.hf.engine import HFJudgeEngine
from stylisticbias.judge.protocol.prompts import render, system_turn
from stylisticbias.judge.protocol.tasks.asks import TaskAsk
from stylisticbias.judge.protocol.tasks.registry import task_of
from stylisticbias_dev import tiny

ROOT = Path(__file__).resolve().parents[4]
TINY_DIR = ROOT / "tests" / ".tiny_models"
TASKS = ROOT / "tests" / "data" / "protocols" / "tasks.yaml"
SYSTEM = "You are a helpful assistant. Follow the instructions and help the user with the task."
ARCH = "qwen3_vl"


@pytest.fixture(scope="module")
def engine() -> HFJudgeEngine:
    path = tiny.ensure_built(ARCH, TINY_DIR / ARCH)
    eng = HFJudgeEngine(
        {"name": f"tiny-{ARCH}", "hub_id": str(path), "dtype": "float32"},
        {"name": "hf", "decoding": "exact", "device": "cpu", "prune_threshold": 1e-4},
        {"orderings": [1], "seeds": [1], "scenarios": [7], "temperature": 1.0, "max_new_tokens": 3},
        load_benchmark(TASKS),
    )
    eng.setup("cpu")
    return eng


def _image(tmp: Path) -> str:
    path = tmp / "img.png"
    Image.fromarray((np.random.RandomState(1).rand(40, 40, 3) * 255).astype("uint8")).save(path)
    return str(path)


def test_rendered_prompt_holds_the_system_turn(
    engine: HFJudgeEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert system_turn(engine.processor)
    seen: list[str] = []

    def spy(*args: Any, **kwargs: Any) -> str:
        out = render(*args, **kwargs)
        seen.append(out)
        return out

    monkeypatch.setattr(hf_tasks, "render", spy)
    bench = engine.benchmark
    sc = bench.task_scenario(101)
    (prompt,) = task_of(sc).prompts(sc, bench)
    rules = task_of(sc).rules(sc, bench)
    img = _image(tmp_path)
    asks = [
        TaskAsk("a", prompt.text, (img,), rules, 1, SYSTEM),
        TaskAsk("b", prompt.text, (img,), rules, 1, ""),
    ]
    replies = engine.answer_tasks(asks)
    assert all(r.mass is not None and sum(r.mass.values()) > 0.99 for r in replies)
    with_sys = [r for r in seen if SYSTEM in r]
    assert len(with_sys) == 1 and len(seen) == 2
    head = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
    assert with_sys[0].startswith(head)  # the system role, not the user text
    assert SYSTEM not in with_sys[0].split("<|im_start|>user")[1]
    # an ask without one renders exactly as the one-turn conversation did
    (plain,) = [r for r in seen if SYSTEM not in r]
    assert plain == engine.processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt.text}]}],
        add_generation_prompt=True,
        tokenize=False,
    )
    # the generated route encodes the system turn too (a longer input than without)
    encs = {
        s: engine.encode_prompt(prompt.text, [Image.open(img).convert("RGB")], s)
        for s in (SYSTEM, "")
    }
    assert encs[SYSTEM]["input_ids"].shape[1] > encs[""]["input_ids"].shape[1]


class _NoSystem:
    """A processor whose chat template rejects the system role (as some templates raise)."""

    def apply_chat_template(self, messages: list[dict[str, Any]], **_: Any) -> str:
        if any(m["role"] == "system" for m in messages):
            raise ValueError("System role not supported")
        return "".join(p.get("text", "<image>") for m in messages for p in m["content"])


def test_a_template_without_a_system_role_gets_it_prepended(
    caplog: pytest.LogCaptureFixture,
) -> None:
    eng = SimpleNamespace(processor=_NoSystem(), chat_template_kwargs={}, model_name="stub")
    assert not system_turn(eng.processor)
    with caplog.at_level(logging.INFO, logger=hf_tasks.__name__):
        first = hf_tasks.system_parts(eng, "Question?", SYSTEM)
        again = hf_tasks.system_parts(eng, "Other?", SYSTEM)
    assert first == (f"{SYSTEM}\nQuestion?", "") and again == (f"{SYSTEM}\nOther?", "")
    notes = [r for r in caplog.records if "no system role" in r.getMessage()]
    assert len(notes) == 1  # noted once per engine
    assert hf_tasks.system_parts(eng, "Q", "") == ("Q", "")
