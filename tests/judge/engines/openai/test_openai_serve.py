"""The openai engine against a real OpenAI-compatible server: ``transformers serve`` (127.0.0.1).

The server is transformers' own (extra ``transformers[serving]``) serving the tiny LLaVA-NeXT
checkpoint on CPU; the judge stage runs ``generate`` end to end through it and writes records
of the ``hf`` engine's schema, parsed by the shared parser. Its quirk -- it samples only when
the body carries ``generation_config`` as a JSON string with ``do_sample: true`` -- is what
``capabilities.sampling: generation_config_json`` in the model file expresses: with it the
seeds give different answers at a high temperature (and the same seed the same answer); without
it the server decodes greedily and every seed answers alike.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from judge_tables import make_tables
from servers import free_port, start_transformers_serve, stop, tiny_llava

from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import load_group_option
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.openai.engine import OpenAIJudgeEngine
from stylisticbias.judge.items import judge_items
from stylisticbias.judge.protocol.parsing import classify
from stylisticbias.judge.run import run_judge
from stylisticbias.judge.summary import run_log_path
from stylisticbias.spec.parse import config_from_params

MODEL = "tiny-llava-next-serve"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("openai") is None,
    reason="transformers serve needs the extra transformers[serving]",
)


@pytest.fixture(scope="module")
def serve() -> Any:
    port = free_port()
    keys = ("STYLISTICBIAS_TRANSFORMERS_SERVE_URL", "STYLISTICBIAS_TRANSFORMERS_SERVE_MODEL")
    old = {k: os.environ.get(k) for k in keys}
    os.environ[keys[0]] = f"http://127.0.0.1:{port}/v1"
    os.environ[keys[1]] = str(tiny_llava())  # the server is pinned to the path it was given
    proc = start_transformers_serve(port)
    yield proc
    stop(proc)
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def params(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("serve")
    p = make_tables(d, 1, values_per_face=2)
    # 2 images x 2 scenarios x 2 orderings (letter (a) the positive, then the negative pole) x 2
    # seeds: 16 requests
    p["judge"].update(scenarios=[1, 23], orderings=[1, 3], seeds=[1, 2], temperature=0.2)
    eng = {
        **load_group_option("engine", "openai"),
        "decoding": "generate",
        "cache": str(d / "cache.sqlite"),
        "progress": False,
    }
    eng["transport"] = {**eng["transport"], "concurrency": 2}
    p["models"] = {MODEL: {**load_group_option("model", MODEL), "engine": eng}}
    return p


def test_judge_stage_generate_through_transformers_serve(
    serve: Any, params: dict[str, Any], tmp_path: Path
) -> None:
    out = run_judge(MODEL, config_from_params(params), progress=False, out_dir=tmp_path / MODEL)
    df = pd.read_parquet(out / "judgments.parquet")  # written through the JUDGMENTS schema
    assert (
        len(df) == 2 * 2 * 2 * 2
        and not df.duplicated(["image_id", "scenario_id", "ordering", "seed"]).any()
    )
    assert (df["engine"] == "openai").all() and (df["decoding"] == "generate").all()
    assert df["response"].notna().all()
    bench = benchmark_from_params(params)
    want = [classify(r, bench.ordering(o)) for r, o in zip(df["response"], df["ordering"])]
    assert list(df["choice"]) == want
    assert set(df["choice"]) <= {"positive", "negative", "invalid"}
    assert (df[["p_pos", "p_neg", "p_invalid"]].sum(axis=1) == 1).all()
    stats = json.loads(run_log_path(out).read_text())["engine_stats"][0]
    assert stats["api_requests"] == len(df) and stats["api_prompt_tokens"] > 100 * len(df)
    assert stats["api_completion_tokens"] >= len(df)


def _answers(params: dict[str, Any], sampling: str, cache: Path) -> list[str]:
    model = load_group_option("model", MODEL)
    model["endpoint"]["capabilities"]["sampling"] = sampling
    judge = {
        **params["judge"],
        "scenarios": [1],
        "orderings": [1],
        "seeds": list(range(1, 5)),
        "temperature": 4.0,
    }
    base = params["models"][MODEL]["engine"]
    eng = {**base, "cache": str(cache), "transport": {**base["transport"], "concurrency": 1}}
    engine = OpenAIJudgeEngine(model, eng, judge, benchmark_from_params(params))
    items = judge_items(config_from_params(params))[:1]
    return list(engine.judge(items, [None])["response"])


def test_sampling_quirk_is_what_the_model_file_says(
    serve: Any, params: dict[str, Any], tmp_path: Path
) -> None:
    sampled = _answers(params, "generation_config_json", tmp_path / "a.sqlite")
    again = _answers(params, "generation_config_json", tmp_path / "b.sqlite")  # no cache
    greedy = _answers(params, "standard", tmp_path / "c.sqlite")
    assert len(set(sampled)) > 1, sampled  # T = 4: the seeds differ
    assert sampled == again  # seeded
    assert len(set(greedy)) == 1, greedy  # the server ignored temperature: greedy


def test_exact_without_logprobs_is_one_clear_error(params: dict[str, Any]) -> None:
    model = load_group_option("model", MODEL)
    bench = benchmark_from_params(params)
    eng = {**params["models"][MODEL]["engine"], "decoding": "exact"}
    with pytest.raises(StylisticBiasError, match="no log-probabilities") as exc:
        OpenAIJudgeEngine(model, eng, params["judge"], bench)
    assert "tiny-llava-next-serve.yaml" in str(exc.value) and "\n" not in str(exc.value)
    fb = OpenAIJudgeEngine(model, {**eng, "exact_fallback": "generate"}, params["judge"], bench)
    assert fb.decoding == "generate"
    sampled = OpenAIJudgeEngine(model, {**eng, "decoding": "sampled"}, params["judge"], bench)
    assert sampled.decoding == "sampled" and not sampled.use_exact  # K requests to the server
