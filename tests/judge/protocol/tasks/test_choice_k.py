"""choice_k: k labelled options, ordinal values, invalid answers recorded with their reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.judge.protocol.tasks.choice_k import distribution_mean
from stylisticbias.judge.protocol.tasks.registry import task_of
from stylisticbias.judge.protocol.tasks.text_only import with_description

TASKS = Path(__file__).resolve().parents[3] / "data" / "protocols" / "tasks.yaml"


@pytest.fixture(scope="module")
def salary():
    bench = load_benchmark(TASKS)
    sc = bench.task_scenario(101)
    task = task_of(sc)
    (prompt,) = task.prompts(sc, bench)
    return bench, sc, task, prompt


def test_prompt_is_reflect_fig9_with_the_options(salary) -> None:
    _, _, _, prompt = salary
    assert (
        "A: < $20,000, B: $20,000 – $40,000, C: $40,000 – $60,000, D: $60,000 – $80,000, "
        "E: $80,000 – $100,000, F: > $100,000\n\nAnswer with ONLY one capital letter from A to F."
    ) in prompt.text


@pytest.mark.parametrize(
    ("text", "label", "value"),
    [
        ("C", "c", 50000),
        ("(f)", "f", 110000),
        ("Answer: E", "e", 90000),
        ("**B**", "b", 30000),
        ("A", "a", 10000),
        ("D.", "d", 70000),
        ("My answer is F", "f", 110000),
    ],
)
def test_valid_answers(salary, text: str, label: str, value: float) -> None:
    bench, sc, task, prompt = salary
    a = task.parse(text, sc, prompt, bench)
    assert (a.choice, a.value, a.reason) == (label, value, None)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("G", "label 'g' outside the labels (a), (b), (c), (d), (e), (f)"),
        ("(h)", "label 'h' outside the labels"),
        ("B or C", "several labels: (b), (c)"),
        ("I cannot tell from a photo.", "hedged or refused ('cannot')"),
        ("", "empty response"),
        ("A person with a suit", "no label of (a), (b)"),
    ],
)
def test_invalid_answers_carry_their_reason(salary, text: str, reason: str) -> None:
    bench, sc, task, prompt = salary
    a = task.parse(text, sc, prompt, bench)
    assert not a.valid and a.outcome == "invalid" and a.reason.startswith(reason)


def test_outcomes_distribution_and_scores(salary) -> None:
    bench, sc, task, prompt = salary
    assert task.outcomes(sc, bench) == ("a", "b", "c", "d", "e", "f", "invalid")
    mass = {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.2, "e": 0.1, "f": 0.0, "invalid": 0.1}
    d = task.distribution(mass, sc, prompt, bench)
    assert d == mass
    want = (0.1 * 10 + 0.2 * 30 + 0.3 * 50 + 0.2 * 70 + 0.1 * 90) / 0.9 * 1000
    assert distribution_mean(d, sc) == pytest.approx(want)
    answers = [task.parse(t, sc, prompt, bench) for t in ("A", "C", "C", "G")]
    s = task.scores(answers, sc)
    assert s["n"] == 4 and s["n_valid"] == 3 and s["invalid_rate"] == 0.25
    assert s["share_c"] == pytest.approx(2 / 3) and s["share_f"] == 0
    assert s["mean_value"] == pytest.approx((10000 + 50000 + 50000) / 3)


def test_text_only_answers_as_choice_k_without_image() -> None:
    bench = load_benchmark(TASKS)
    sc = bench.task_scenario(105)
    task = task_of(sc)
    (prompt,) = task.prompts(sc, bench)
    assert prompt.images == 0 and prompt.text.startswith("{description} What is")
    filled = with_description(prompt, "A woman in her thirties wearing glasses.")
    assert filled.text.startswith("A woman in her thirties wearing glasses. What is")
    assert task.outcomes(sc, bench) == ("a", "b", "c", "d", "invalid")
    a = task.parse("C", sc, filled, bench)
    assert (a.choice, a.value) == ("c", 3)
    assert task.parse("E", sc, filled, bench).reason.startswith("label 'e' outside")
