"""The task-type registry: protocols declare a task per scenario, one module per type, and a
task an engine cannot judge fails at compose time in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.parsing import classify
from stylisticbias.judge.protocol.prompts import prompt_specs
from stylisticbias.judge.protocol.tasks.registry import (
    SCENARIO_TASKS,
    check_engine_tasks,
    check_protocol_tasks,
    task_of,
    task_prompts,
)
from stylisticbias.validate import _check_tasks
from tests.protocols import edited_protocol

ROOT = Path(__file__).resolve().parents[4]
TASKS = ROOT / "tests" / "data" / "protocols" / "tasks.yaml"
ANSWERS = ROOT / "tests" / "judge" / "data" / "answer_corpus.jsonl"


def test_registry_holds_every_task_type() -> None:
    assert list(SCENARIO_TASKS) == [
        "binary_choice",
        "choice_k",
        "pairwise",
        "numeric",
        "factuality",
        "text_only",
    ]
    for name, t in SCENARIO_TASKS.items():
        assert t.name == name


def test_protocol_with_tasks_loads_and_builds_prompts() -> None:
    bench = load_benchmark(TASKS)
    check_protocol_tasks(bench)
    assert bench.task_names == ("binary_choice", "choice_k", "pairwise", "numeric", "text_only")
    got = [(s.id, p.variant, p.images, p.slots) for s, p in task_prompts(bench)]
    assert got == [
        (101, 0, 1, ()),
        (102, 0, 2, ("first", "second")),
        (102, 1, 2, ("second", "first")),
        (103, 0, 1, ("first", "second")),  # composite: one image, identities left/right
        (103, 1, 1, ("second", "first")),
        (104, 0, 1, ()),
        (105, 0, 0, ()),
    ]
    assert [s.id for s, _ in task_prompts(bench, [104])] == [104]


def test_binary_is_the_forced_choice_path_unchanged() -> None:
    """The binary task type's prompts and verdicts are the judge stage's, on the paper's
    protocol: every prompt text and every answer of the parser corpus."""
    bench = load_benchmark("stylisticbias")
    binary = SCENARIO_TASKS["binary_choice"]
    specs = prompt_specs(bench, bench.ordering_ids)
    ours = [p for s in bench.scenarios for p in binary.prompts(s, bench)]
    assert [(p.scenario_id, p.variant, p.text) for p in ours] == [
        (s.scenario.id, s.ordering.id, s.text) for s in specs
    ]
    rows = [json.loads(x) for x in ANSWERS.read_text(encoding="utf-8").splitlines()]
    assert len(rows) > 100
    for r in rows:
        for prompt in ours[:4]:
            want = classify(r["text"], bench.ordering(prompt.variant), bench.parser)
            got = binary.parse(r["text"], bench.scenarios[0], prompt, bench)
            assert got.outcome == want, r["text"]
            assert (got.reason is None) == (want != "invalid")


def test_binary_distribution_maps_letters_to_poles() -> None:
    bench = load_benchmark("stylisticbias")
    binary = SCENARIO_TASKS["binary_choice"]
    s = bench.scenarios[0]
    for p in binary.prompts(s, bench):
        d = binary.distribution({"a": 0.7, "b": 0.2, "invalid": 0.1}, s, p, bench)
        pos = bench.ordering(p.variant).positive_letter
        assert d["positive"] == pytest.approx(0.7 if pos == "a" else 0.2)
        assert sum(d.values()) == pytest.approx(1.0)


def _edit_task(tmp_path: Path, index: int, **changes) -> str:
    def edit(cfg: dict) -> None:
        for k, v in changes.items():
            if v is None:
                cfg["tasks"][index].pop(k, None)
            else:
                cfg["tasks"][index][k] = v

    return edited_protocol(tmp_path, edit, TASKS)


@pytest.mark.parametrize(
    ("index", "changes", "message"),
    [
        (0, {"task": "ranking"}, "unknown task type 'ranking'; valid: binary_choice, choice_k"),
        (0, {"options": None}, "task choice_k needs options"),
        (3, {"range": None}, "task numeric needs range"),
        (4, {"answers": None}, "task text_only needs answers"),
        (1, {"options": [{"label": "a", "text": "x"}]}, "task pairwise takes two options"),
    ],
)
def test_bad_task_is_one_line(tmp_path: Path, index: int, changes: dict, message: str) -> None:
    bench = load_benchmark(_edit_task(tmp_path, index, **changes))
    with pytest.raises(StylisticBiasError, match=message) as err:
        check_protocol_tasks(bench)
    assert "\n" not in str(err.value) and f"tasks[{index}]" in str(err.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"prompt": "What {colour}?"}, r"unknown placeholder \{colour\}; valid: options"),
        ({"range": {"low": 5, "high": 1}}, "low 5 must be below high 1"),
        ({"range": {"low": 1, "high": 5, "ranges": "mean"}}, "ranges: 'mean'; valid: midpoint"),
        ({"layout": "stacked"}, "layout: 'stacked'; valid: two_images, composite"),
        ({"options": [{"label": "ab", "text": "x"}]}, "is not one letter or digit"),
        ({"id": 7}, r"ids \[7\] used twice"),
        ({"colour": "red"}, "unknown key 'colour'"),
    ],
)
def test_bad_task_fields_fail_when_read(tmp_path: Path, changes: dict, message: str) -> None:
    path = _edit_task(tmp_path, 0, **changes)
    with pytest.raises(StylisticBiasError, match=message) as err:
        load_benchmark(path)
    assert "\n" not in str(err.value)


def test_engine_without_the_task_fails_at_compose_time() -> None:
    bench = load_benchmark(TASKS)
    with pytest.raises(StylisticBiasError) as err:
        check_engine_tasks(bench, "simulated", "models.sim")
    msg = str(err.value)
    assert "\n" not in msg
    # beside binary scenarios, the other task types are not judged by any engine
    assert msg.startswith("models.sim: protocol")
    assert "choice_k, numeric, pairwise, text_only beside scenarios:" in msg
    # a protocol of tasks alone: the simulated engine judges them; hf and openai too, within
    # what the model file says it takes (max_images) and what its decoding gives
    reflect = load_benchmark("reflect")
    check_engine_tasks(reflect, "simulated", "models.sim")
    model = {"name": "m", "_target_": "stylisticbias.judge.engines.hf.engine.HFJudgeEngine"}
    with pytest.raises(StylisticBiasError, match="shows 2 images in one prompt"):
        _check_tasks("m", model, reflect)
    with pytest.raises(StylisticBiasError, match="engine 'plugin' cannot judge task type"):
        check_engine_tasks(reflect, "plugin", "models.x")
    # the paper's protocol asks only binary: every engine judges it
    paper = load_benchmark("stylisticbias")
    for engine in ("hf", "openai", "simulated"):
        check_engine_tasks(paper, engine, "models.x")


def test_task_of_scenario_is_binary() -> None:
    bench = load_benchmark(TASKS)
    assert task_of(bench.scenarios[0]).name == "binary_choice"
    assert task_of(bench.task_scenario(102)).name == "pairwise"
