"""Served exact mode in few requests: answer paths (``n`` sampled continuations with
log-probabilities at every position) and vLLM's batched chat endpoint, against the loopback
server planted with realistic answer trees (:mod:`stylisticbias_dev.planted_answers`), whose
true verdict distribution is known by enumeration.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from servers import free_port, start_loopback, stop

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.openai.exact import split_batch
from stylisticbias.judge.engines.openai.transport import normalise
from stylisticbias.judge.protocol.parsing import parse_response
from stylisticbias_dev.bench.exact_requests import _image, engine_for, judge_one
from stylisticbias_dev.planted_answers import EOS, draw_tree, truth

TREES = (0, 1, 2)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One loopback server per planted tree: ``{seed: (url, log, tree)}``."""
    d = tmp_path_factory.mktemp("trees")
    saved = os.environ.get("STYLISTICBIAS_LOOPBACK_URL")
    servers, procs = {}, []
    for seed in TREES:
        tree = draw_tree(seed, temperature=0.2, max_new_tokens=16)
        port = free_port()
        log = d / f"log{seed}.jsonl"
        faults = {"planted_logprobs": tree.table, "eos": [EOS]}
        procs.append(start_loopback(port, faults=faults, log=log, with_model=False))
        servers[seed] = (f"http://127.0.0.1:{port}/v1", log, tree)
    yield servers
    for p in procs:
        stop(p)
    if saved is None:
        os.environ.pop("STYLISTICBIAS_LOOPBACK_URL", None)
    else:
        os.environ["STYLISTICBIAS_LOOPBACK_URL"] = saved


def _sent(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.parametrize("seed", TREES)
def test_batched_paths_take_at_most_three_requests(planted: Any, seed: int, tmp_path: Path) -> None:
    url, log, tree = planted[seed]
    want = truth(tree, parse_response)
    before = _sent(log)
    api = engine_for(
        url, tmp_path / "c.sqlite", 0.2, 16, exact_paths=16, batch_chat=True, undecided_target=1e-3
    )
    d = judge_one(api, _image(tmp_path))
    assert _sent(log) - before == d.requests <= 3
    assert d.undecided <= 1e-3
    for v in want:  # never overstated; short of the truth by at most the undecided mass
        assert d.mass[v] <= want[v] + 1e-12
        assert d.mass[v] >= want[v] - d.undecided - 1e-12
    assert sum(d.mass.values()) + d.undecided == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("batch", [True, False])
def test_whole_tree_equals_enumeration(planted: Any, batch: bool, tmp_path: Path) -> None:
    """Nothing pruned, no target: every verdict equals the planted truth to 1e-9."""
    url, _, tree = planted[0]
    want = truth(tree, parse_response)
    api = engine_for(
        url, tmp_path / "c.sqlite", 0.2, 16, exact_paths=4, batch_chat=batch, undecided_target=0.0
    )
    api.exact = type(api.exact)(**{**api.exact.__dict__, "prune_threshold": 0.0})
    d = judge_one(api, _image(tmp_path))
    assert d.undecided == pytest.approx(0.0, abs=1e-9)
    for v in want:
        assert d.mass[v] == pytest.approx(want[v], abs=1e-9)


def test_paths_cut_requests_against_one_token_per_request(planted: Any, tmp_path: Path) -> None:
    url, _, _ = planted[1]
    counts = {}
    for name, paths in (("node", 0), ("paths", 16)):
        api = engine_for(
            url,
            tmp_path / f"{name}.sqlite",
            0.2,
            16,
            exact_paths=paths,
            batch_chat=False,
            undecided_target=1e-3,
        )
        counts[name] = judge_one(api, _image(tmp_path)).requests
    assert counts["paths"] * 3 < counts["node"], counts


def test_normalise_reads_every_position_of_every_choice() -> None:
    def pos(tok: str) -> dict[str, Any]:
        return {"token": tok, "logprob": -0.1, "top_logprobs": [{"token": tok, "logprob": -0.1}]}

    data = {
        "choices": [
            {
                "message": {"content": "AB"},
                "logprobs": {"content": [pos("A"), pos("B")]},
                "finish_reason": "stop",
            },
            {
                "message": {"content": None, "refusal": "no"},
                "logprobs": {"content": [pos("I")]},
                "finish_reason": "stop",
            },
        ]
    }
    res = normalise(data)
    assert [[t for t, _ in p] for p in res["paths"]] == [["A", "B"], ["I"]]
    assert res["top_logprobs"] == [["A", -0.1]]
    assert res["choice_refusals"] == [None, "no"]
    parts = split_batch(res, 2)
    assert parts[1]["refusal"] == "no" and parts[0]["paths"] == [res["paths"][0]]
    with pytest.raises(StylisticBiasError, match="came back with 2 choices"):
        split_batch(res, 3)
