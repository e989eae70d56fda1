"""The judge fingerprint holds what changes a record and nothing else: how requests travel
(online or as provider batch jobs, at what rate) and what they cost never do."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.judge.fingerprint import fingerprint

MODEL: dict[str, Any] = {
    "_target_": "stylisticbias.judge.engines.openai.engine.OpenAIJudgeEngine",
    "name": "served",
    "endpoint": {
        "backend": "vllm",
        "base_url": "http://127.0.0.1:8000/v1",
        "served_model": "m",
        "limits": {"concurrency": 8},
    },
    "prices": {"input_per_million": 1.0, "output_per_million": 2.0},
}
ENGINE = {"name": "openai", "decoding": "generate"}
JUDGE = {"seeds": [1], "orderings": [1, 2], "temperature": 1.0, "max_new_tokens": 8}


def _sha(model: dict[str, Any], judge: dict[str, Any] = JUDGE) -> str:
    return fingerprint(model, ENGINE, judge, load_benchmark("stylisticbias"), None)["sha256"]


def _with(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    model = copy.deepcopy(MODEL)
    node = model
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return model


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("endpoint", "batch"), True),
        (("endpoint", "batch"), {"max_lines": 100, "retry": "online"}),
        (("endpoint", "limits"), {"concurrency": 64, "rpm": 10}),
        (("prices",), {"input_per_million": 0.5, "batch_discount": 0.5}),
        (("display_name",), "Another label"),
    ],
)
def test_transport_price_and_label_settings_keep_the_fingerprint(path, value) -> None:
    assert _sha(_with(path, value)) == _sha(MODEL)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("endpoint", "served_model"), "another-model"),
        (("endpoint", "backend"), "sglang"),
    ],
)
def test_what_is_asked_of_whom_changes_the_fingerprint(path, value) -> None:
    assert _sha(_with(path, value)) != _sha(MODEL)
    assert _sha(MODEL, {**JUDGE, "temperature": 0.5}) != _sha(MODEL)
