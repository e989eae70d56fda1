"""An engine's reply read by its task: the same reading for every engine. Bad answers are
invalid with their reason, never an error; an exact reply becomes the task's outcome
distribution (undecided mass on invalid) and a seeded draw from it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chisquare

from stylisticbias.benchmark import load_benchmark
from stylisticbias.judge.protocol.tasks.asks import TaskAsk, TaskReply, draw_label, read_reply
from stylisticbias.judge.protocol.tasks.registry import task_of

ROOT = Path(__file__).resolve().parents[4]
TASKS = ROOT / "tests" / "data" / "protocols" / "tasks.yaml"


def _read(tid: int, reply: TaskReply, variant: int = 0, key: str = "k"):
    bench = load_benchmark(TASKS)
    sc = bench.task_scenario(tid)
    task = task_of(sc)
    prompt = task.prompts(sc, bench)[variant]
    ask = TaskAsk(key, prompt.text, (), task.rules(sc, bench), 1)
    return read_reply(task, sc, prompt, bench, ask, reply)


@pytest.mark.parametrize(
    ("tid", "text", "variant", "outcome", "value", "reason"),
    [
        (101, "C", 0, "c", 50000.0, None),
        (101, "G", 0, "invalid", None, "g"),  # a label outside the options
        (101, "B or C", 0, "invalid", None, ""),  # two labels
        (102, "A", 0, "first", None, None),
        (102, "A", 1, "second", None, None),  # the swap: slot 1 shows the second identity
        (104, "$85,000", 0, "value", 85000.0, None),
        (104, "$5", 0, "invalid", None, "range"),  # outside the plausible range
        (104, "I cannot say.", 0, "invalid", None, ""),
        (104, "", 0, "invalid", None, ""),
    ],
)
def test_generated_text_is_read_by_its_task(tid, text, variant, outcome, value, reason) -> None:
    got = _read(tid, TaskReply(text=text), variant)
    assert got.answer.outcome == outcome and got.dist is None and got.response == text
    if value is not None:
        assert got.answer.value == value
    if reason is None:
        assert got.answer.reason is None
    else:
        assert got.answer.reason and reason in got.answer.reason.lower()


def test_refusal_is_invalid_with_the_servers_reason() -> None:
    got = _read(101, TaskReply(refusal="content policy"))
    assert got.answer.outcome == "invalid" and "content policy" in str(got.answer.reason)


def test_exact_reply_distribution_and_draw() -> None:
    mass = {"a": 0.0, "b": 0.1, "c": 0.5, "d": 0.2, "e": 0.1, "f": 0.0, "invalid": 0.05}
    best = {"b": "B", "c": "(c)", "d": "D", "e": "E.", "invalid": "maybe"}
    got = _read(101, TaskReply(mass=mass, undecided=0.05, best=best))
    assert list(got.dist) == ["a", "b", "c", "d", "e", "f", "invalid"]
    assert got.dist["invalid"] == pytest.approx(0.1) and sum(got.dist.values()) == pytest.approx(1)
    assert got.undecided == 0.05
    # the draw follows the distribution (undecided drawn as invalid), seeded by the ask's key
    keys = [f"k{i}" for i in range(3000)]
    draws = [draw_label(mass, 0.05, 1, k) for k in keys]
    assert draws == [draw_label(mass, 0.05, 1, k) for k in keys]
    labels = ["b", "c", "d", "e", "invalid"]
    observed = np.array([draws.count(x) for x in labels])
    expected = np.array([0.1, 0.5, 0.2, 0.1, 0.1]) * len(keys)
    assert chisquare(observed, expected).pvalue > 1e-3
    # a drawn answer carries its label's text and value; an invalid one a reason
    for k in keys[:200]:
        r = _read(101, TaskReply(mass=mass, undecided=0.05, best=best), key=k)
        if r.answer.valid:
            assert (
                r.answer.value == {"b": 30000, "c": 50000, "d": 70000, "e": 90000}[r.answer.outcome]
            )
            assert r.response == best[r.answer.outcome]
        else:
            assert r.answer.reason


def test_exact_pairwise_maps_labels_to_identities_under_the_swap() -> None:
    mass = {"a": 0.7, "b": 0.3, "invalid": 0.0}
    assert _read(102, TaskReply(mass=mass), 0).dist["first"] == pytest.approx(0.7)
    assert _read(102, TaskReply(mass=mass), 1).dist["first"] == pytest.approx(0.3)
