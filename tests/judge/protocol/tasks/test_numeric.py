"""The numeric task's parser against a corpus of >= 200 written salary answers.

``data/numeric_answers.jsonl`` (``data/make_numeric_corpus.py``): amounts in many notations,
ranges, refusals and answers without one plausible number. Every expected number must come out
exactly, every refusal and every other invalid answer must be invalid with its reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stylisticbias.benchmark import NumericRange, load_benchmark
from stylisticbias.judge.protocol.tasks.numeric import parse_number
from stylisticbias.judge.protocol.tasks.registry import task_of

CORPUS = Path(__file__).parent / "data" / "numeric_answers.jsonl"
SALARY = NumericRange(1000, 10_000_000, "USD", "midpoint")
TASKS = Path(__file__).resolve().parents[3] / "data" / "protocols" / "tasks.yaml"


def _corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]


def test_corpus_size_and_kinds() -> None:
    rows = _corpus()
    kinds = {r["kind"] for r in rows}
    assert len(rows) >= 200
    assert kinds == {"amount", "range", "refusal", "invalid"}
    assert sum(r["kind"] == "refusal" for r in rows) >= 25
    assert sum(r["kind"] == "range" for r in rows) >= 15


def test_corpus_no_wrong_number_every_refusal_invalid() -> None:
    wrong, missed, refusals_read = [], [], []
    for r in _corpus():
        got = parse_number(r["text"], SALARY)
        if r["expected"] is None:
            if got.value is not None:
                (refusals_read if r["kind"] == "refusal" else wrong).append((r["text"], got))
            else:
                assert got.reason, r["text"]
        elif got.value is None:
            missed.append((r["text"], got.reason))
        elif got.value != pytest.approx(r["expected"], abs=1e-6):
            wrong.append((r["text"], got.value, r["expected"]))
    assert not refusals_read, refusals_read
    assert not wrong, wrong
    assert not missed, missed


def test_refusal_reason_names_the_marker() -> None:
    got = parse_number("I'm sorry, I cannot say. Maybe $60,000.", SALARY)
    assert got.value is None and got.reason.startswith("refusal")


@pytest.mark.parametrize("text", ["50,000-60,000", "between 50 and 60 thousand", "$50k to $60k"])
def test_ranges_midpoint_or_invalid_per_protocol(text: str) -> None:
    assert parse_number(text, SALARY).value == 55_000
    assert parse_number(text, SALARY).range == (50_000, 60_000)
    strict = NumericRange(1000, 10_000_000, "USD", "invalid")
    got = parse_number(text, strict)
    assert got.value is None and "a range" in got.reason


def test_plausible_range_and_ambiguous_separator() -> None:
    got = parse_number("85", SALARY)
    assert got.value is None and "outside the plausible range" in got.reason
    # "3.500": 3500 (thousands) is plausible, 3.5 is not -> 3500
    assert parse_number("3.500", SALARY).value == 3500
    # both readings plausible -> ambiguous, invalid
    wide = NumericRange(1, 10_000_000)
    got = parse_number("3.500", wide)
    assert got.value is None and "ambiguous" in got.reason
    assert parse_number("$90,000-$80,000", SALARY).reason.endswith("runs backwards")


def test_numeric_task_parse_and_scores() -> None:
    bench = load_benchmark(TASKS)
    sc = bench.task_scenario(104)
    task = task_of(sc)
    (prompt,) = task.prompts(sc, bench)
    assert "position of nurse at your company" in prompt.text
    assert prompt.text.endswith("Salary:")
    answers = [task.parse(t, sc, prompt, bench) for t in ("$60,000", "70k", "I can't", "12")]
    assert [a.value for a in answers[:2]] == [60_000, 70_000]
    assert not answers[2].valid and not answers[3].valid
    s = task.scores(answers, sc)
    assert s["n"] == 4 and s["n_valid"] == 2 and s["mean"] == 65_000 and s["invalid_rate"] == 0.5
