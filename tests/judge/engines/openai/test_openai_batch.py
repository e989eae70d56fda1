"""Provider batch jobs of the ``openai`` engine against a loopback server in the Batch API shape
(:mod:`stylisticbias_dev.openai_batch_loopback`, planted answers, in this process: no model,
nothing sleeps -- polling waits with a counting no-op).

* a model switched to batch judges with every response from batch output files, records
  byte-identical to the online mode's, 0 requests sent online; ``exact`` asks one job per round;
* a stage killed while its job is in progress polls the same job when run again: no line is
  received twice; an expired job's unanswered lines are asked once more (a new job, or online);
* the dry run prices online and batch side by side from the model file's prices;
* ``export`` -> a ``vllm run-batch``-shaped runner -> ``import``: the stage then sends nothing.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from judge_tables import make_tables

from stylisticbias.config import load_group_option
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge import batch as batch_cli
from stylisticbias.judge.engines.openai import batch as batch_mod
from stylisticbias.judge.engines.openai.spec import endpoint_spec
from stylisticbias.judge.run import run_judge
from stylisticbias.judge.summary import run_log_path
from stylisticbias.spec.parse import config_from_params
from stylisticbias_dev.openai_batch_loopback import BatchLoopback, run_batch
from stylisticbias_dev.planted_answers import draw_tree

MODEL = "tiny-llava-next-vllm"
ANSWERS = ["A", "B", "(a)", "**B**", "I cannot tell from the image.", "b"]


class Killed(BaseException):
    """What the simulated kill raises (like SIGKILL, nothing below catches it)."""


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Polling waits with a recorder, never for real."""
    slept: list[float] = []
    monkeypatch.setattr(batch_mod, "SLEEP", slept.append)
    return slept


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    params = make_tables(tmp_path_factory.mktemp("tables"), 1, values_per_face=2)
    params["judge"].update(
        scenarios=[1, 23], orderings=[1, 2, 3, 4], seeds=[1, 2, 3], temperature=0.2
    )
    return params


@pytest.fixture
def server() -> Any:
    cfg = {"hash_answers": ANSWERS, "planted_logprobs": draw_tree(3, 0.2, 4).table}
    with BatchLoopback(cfg, served="tiny-llava-next") as s:
        yield s


def params_for(
    tables: dict[str, Any],
    url: str,
    cache: Path,
    *,
    batch: Any = True,
    prices: dict[str, Any] | None = None,
    **engine: Any,
) -> dict[str, Any]:
    p = json.loads(json.dumps(tables))
    base = load_group_option("engine", "openai")
    transport = {**base["transport"], "max_retries": 0}
    eng = {
        **base,
        "cache": str(cache),
        "progress": False,
        "exact_paths": 0,
        **engine,
        "transport": transport,
    }
    model = load_group_option("model", MODEL)
    caps = {**model["endpoint"]["capabilities"], "batch_chat": False}
    batch_cfg = {"enabled": True, "poll_interval_s": 30.0} if batch is True else batch
    model["endpoint"] = {
        **model["endpoint"],
        "base_url": url,
        "api_key_env": None,
        "capabilities": caps,
        "batch": batch_cfg,
    }
    if prices is not None:
        model["prices"] = prices
    if engine.get("decoding") in ("exact", "sampled"):  # a shallow tree: fewer rounds
        p["judge"].update(scenarios=[1], orderings=[1, 2], max_new_tokens=4)
    p["models"] = {MODEL: {**model, "engine": eng}}
    return p


def judge(params: dict[str, Any], out: Path) -> Path:
    return run_judge(MODEL, config_from_params(params), progress=False, out_dir=out / MODEL)


def ledger(out: Path) -> list[dict[str, Any]]:
    return json.loads((out / "batch" / "ledger.json").read_text())["jobs"]


def engine_stats(out: Path) -> dict[str, Any]:
    (stats,) = json.loads(run_log_path(out).read_text())["engine_stats"]  # one rank
    return stats


@pytest.fixture
def online_reference(tables: dict[str, Any], server: BatchLoopback, tmp_path: Path) -> Any:
    """Records of the online mode (batch off), per decoding, through the same server."""
    made: dict[str, bytes] = {}

    def get(decoding: str) -> bytes:
        if decoding not in made:
            d = tmp_path / f"online-{decoding}"
            p = params_for(tables, server.url, d / "cache.sqlite", batch=False, decoding=decoding)
            out = judge(p, d)
            made[decoding] = (out / "judgments.parquet").read_bytes()
            server.online.clear()
        return made[decoding]

    return get


def test_generate_through_batch_is_byte_identical_to_online(
    tables: dict[str, Any],
    server: BatchLoopback,
    online_reference: Any,
    tmp_path: Path,
    no_sleep: list[float],
) -> None:
    want = online_reference("generate")
    p = params_for(tables, server.url, tmp_path / "cache.sqlite", decoding="generate")
    out = judge(p, tmp_path / "b")
    assert (out / "judgments.parquet").read_bytes() == want
    assert sum(server.online.values()) == 0  # every response from a batch output file
    jobs = ledger(out)
    assert len(jobs) == 1 and jobs[0]["status"] == "completed"
    n = len(pd.read_parquet(out / "judgments.parquet"))
    assert jobs[0]["lines"] == jobs[0]["done"] == n and set(server.received.values()) == {1}
    stats = engine_stats(out)
    assert stats["api_requests"] == 0 and stats["api_batch_lines_done"] == n
    assert stats["api_batch_prompt_tokens"] == 100 * n
    assert no_sleep and set(no_sleep) == {30.0}  # it polled, waiting poll_interval_s each time
    # the run log names the job billed: its provider id, lines, tokens
    (logged,) = json.loads(run_log_path(out).read_text())["batch_jobs"]
    assert logged["batch_id"] == jobs[0]["batch_id"] and logged["batch_id"] in server.batches
    assert logged["done"] == n and logged["prompt_tokens"] == 100 * n
    # a rerun: nothing to do, nothing submitted
    judge(p, tmp_path / "b")
    assert len(server.batches) == 1


@pytest.mark.parametrize(
    "decoding",
    ["exact", pytest.param("sampled", marks=pytest.mark.slow)],  # slow: ~6 CPU-s
)
def test_exact_asks_one_job_per_round_and_matches_online(
    tables: dict[str, Any],
    server: BatchLoopback,
    online_reference: Any,
    tmp_path: Path,
    decoding: str,
) -> None:
    want = online_reference(decoding)
    p = params_for(tables, server.url, tmp_path / "cache.sqlite", decoding=decoding)
    out = judge(p, tmp_path / "b")
    assert (out / "judgments.parquet").read_bytes() == want
    assert sum(server.online.values()) == 0
    rounds = Counter(j["round"] for j in ledger(out))
    assert len(rounds) > 2 and set(rounds.values()) == {1}  # each round one job
    assert set(server.received.values()) == {1}


@pytest.mark.slow  # a stage run (~2 CPU-s); the split itself: test_export_splits_within_limits
def test_limits_split_a_round_into_several_jobs(
    tables: dict[str, Any], server: BatchLoopback, online_reference: Any, tmp_path: Path
) -> None:
    want = online_reference("generate")
    p = params_for(
        tables,
        server.url,
        tmp_path / "cache.sqlite",
        decoding="generate",
        batch={"max_lines": 10, "poll_interval_s": 0},
    )
    out = judge(p, tmp_path / "b")
    assert (out / "judgments.parquet").read_bytes() == want
    jobs = ledger(out)
    n = sum(j["lines"] for j in jobs)
    assert len(jobs) == -(-n // 10) and max(j["lines"] for j in jobs) == 10
    assert {j["round"] for j in jobs} == {1} and set(server.received.values()) == {1}


def test_killed_while_in_progress_resumes_polling_the_same_job(
    tables: dict[str, Any],
    server: BatchLoopback,
    online_reference: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    want = online_reference("generate")
    p = params_for(tables, server.url, tmp_path / "cache.sqlite", decoding="generate")
    server.hold = True

    def kill(seconds: float) -> None:
        raise Killed

    monkeypatch.setattr(batch_mod, "SLEEP", kill)
    with pytest.raises(Killed):
        judge(p, tmp_path / "b")
    (job,) = ledger(tmp_path / "b" / MODEL)
    assert job["batch_id"] in server.batches and job["status"] == "in_progress"
    polls = server.polls[job["batch_id"]]
    server.hold = False
    monkeypatch.setattr(batch_mod, "SLEEP", lambda s: None)
    out = judge(p, tmp_path / "b")
    assert (out / "judgments.parquet").read_bytes() == want
    assert list(server.batches) == [job["batch_id"]]  # the same job, polled again
    assert server.polls[job["batch_id"]] > polls
    assert set(server.received.values()) == {1} and sum(server.online.values()) == 0
    assert engine_stats(out)["api_batch_jobs_resumed"] == 1


@pytest.mark.slow  # two stage runs (~4 CPU-s); the ledger's resume: the in-process kill above
def test_job_recorded_by_file_only_is_found_not_submitted_again(
    tables: dict[str, Any],
    server: BatchLoopback,
    online_reference: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Killed after the provider created the job, before its id reached the ledger."""
    want = online_reference("generate")
    p = params_for(tables, server.url, tmp_path / "cache.sqlite", decoding="generate")
    real_create = batch_mod.BatchClient.create

    def create_then_die(self: Any, *a: Any, **kw: Any) -> str:
        real_create(self, *a, **kw)
        raise Killed

    monkeypatch.setattr(batch_mod.BatchClient, "create", create_then_die)
    with pytest.raises(Killed):
        judge(p, tmp_path / "b")
    (job,) = ledger(tmp_path / "b" / MODEL)
    assert job["batch_id"] is None and job["input_file_id"]
    monkeypatch.setattr(batch_mod.BatchClient, "create", real_create)
    out = judge(p, tmp_path / "b")
    assert (out / "judgments.parquet").read_bytes() == want
    assert len(server.batches) == 1 and set(server.received.values()) == {1}


@pytest.mark.parametrize(
    "retry",
    ["batch", pytest.param("online", marks=pytest.mark.slow)],  # slow: ~2 CPU-s
)
def test_expired_job_with_half_done_asks_the_rest_once(
    tables: dict[str, Any],
    server: BatchLoopback,
    online_reference: Any,
    tmp_path: Path,
    retry: str,
) -> None:
    want = online_reference("generate")
    p = params_for(
        tables,
        server.url,
        tmp_path / "cache.sqlite",
        decoding="generate",
        batch={"retry": retry, "poll_interval_s": 0},
    )
    n = 48  # 2 images x 2 scenarios x 4 orderings x 3 seeds
    server.expire = {1: n // 2}
    out = judge(p, tmp_path / "b")
    assert (out / "judgments.parquet").read_bytes() == want
    jobs = ledger(out)
    assert jobs[0]["status"] == "expired" and jobs[0]["done"] == jobs[0]["failed"] == n // 2
    if retry == "batch":
        assert len(jobs) == 2 and jobs[1]["lines"] == n // 2 and jobs[1]["status"] == "completed"
        assert Counter(server.received.values()) == {1: n // 2, 2: n // 2}
        assert sum(server.online.values()) == 0
    else:
        assert len(jobs) == 1 and set(server.received.values()) == {1}
        assert sum(server.online.values()) == n // 2  # the rest online, once each
        assert set(server.online.values()) == {1}
    received_twice = {k for k, v in server.received.items() if v > 1}
    assert len(received_twice) == (n // 2 if retry == "batch" else 0)


@pytest.mark.slow  # a stage run (~2 CPU-s); fast sibling: the expired job above
def test_failed_job_is_submitted_again_then_online(
    tables: dict[str, Any], server: BatchLoopback, online_reference: Any, tmp_path: Path
) -> None:
    want = online_reference("generate")
    p = params_for(
        tables,
        server.url,
        tmp_path / "cache.sqlite",
        decoding="generate",
        batch={"max_resubmits": 1, "poll_interval_s": 0},
    )
    server.fail = {1, 2}
    out = judge(p, tmp_path / "b")
    assert (out / "judgments.parquet").read_bytes() == want
    assert [j["status"] for j in ledger(out)] == ["failed", "failed"]
    assert set(server.online.values()) == {1} and sum(server.online.values()) == 48


def test_dry_run_prices_online_and_batch_side_by_side(
    tables: dict[str, Any],
    server: BatchLoopback,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from stylisticbias.benchmark import benchmark_from_params
    from stylisticbias.judge.engines.factory import make_engine
    from stylisticbias.judge.items import judge_items

    prices = {"input_per_million": 2.5, "output_per_million": 10.0, "batch_discount": 0.5}
    p = params_for(tables, server.url, tmp_path / "c.sqlite", decoding="generate", prices=prices)
    cfg = config_from_params(p)
    eng = make_engine(
        p["models"][MODEL], {**p["judge"], "orderings": [1, 2, 3, 4]}, benchmark_from_params(p)
    )
    est = eng.estimate(judge_items(cfg))
    assert est.cost_usd > 0 and est.batch_cost_usd == pytest.approx(est.cost_usd / 2)
    assert est.batch and "through batch jobs" in est.summary()
    p["models"][MODEL]["prices"] = {"input_per_million": 2.5}
    eng = make_engine(
        p["models"][MODEL], {**p["judge"], "orderings": [1, 2, 3, 4]}, benchmark_from_params(p)
    )
    est = eng.estimate(judge_items(cfg))
    assert est.batch_cost_usd is None and "batch price not set" in est.summary()
    assert not server.batches and not server.online  # nothing sent


@pytest.mark.parametrize(
    "decoding",
    ["generate", pytest.param("exact", marks=pytest.mark.slow)],  # slow: ~3 CPU-s
)
def test_export_run_batch_import_then_stage_sends_nothing(
    tables: dict[str, Any],
    server: BatchLoopback,
    online_reference: Any,
    tmp_path: Path,
    decoding: str,
) -> None:
    want = online_reference(decoding)
    p = params_for(tables, server.url, tmp_path / "cache.sqlite", batch=False, decoding=decoding)
    params_file = tmp_path / "params.json"
    params_file.write_text(json.dumps(p))
    rounds = 0
    while True:  # exact: one export/import per round
        rounds += 1
        f = tmp_path / f"requests-{rounds}.jsonl"
        assert batch_cli.main(["export", MODEL, str(f), "--params", str(params_file)]) == 0
        if not f.exists():
            break
        first = json.loads(f.read_text().splitlines()[0])
        assert first["method"] == "POST" and first["url"] == "/v1/chat/completions"
        part = first["body"]["messages"][0]["content"][0]
        assert part["image_url"]["url"].startswith("data:image/png;base64,")
        answers = tmp_path / f"answers-{rounds}.jsonl"
        run_batch(f, answers, server.cfg, "tiny-llava-next")
        assert batch_cli.main(["import", MODEL, str(answers), "--params", str(params_file)]) == 0
    assert rounds == 2 if decoding == "generate" else rounds > 3
    out = judge(p, tmp_path / "b")
    assert (out / "judgments.parquet").read_bytes() == want
    assert sum(server.online.values()) == 0 and engine_stats(out)["api_requests"] == 0


def test_export_splits_within_limits(
    tables: dict[str, Any], server: BatchLoopback, tmp_path: Path
) -> None:
    p = params_for(tables, server.url, tmp_path / "cache.sqlite", batch=False, decoding="generate")
    params_file = tmp_path / "params.json"
    params_file.write_text(json.dumps(p))
    f = tmp_path / "requests.jsonl"
    assert (
        batch_cli.main(["export", MODEL, str(f), "--params", str(params_file), "--max-lines", "20"])
        == 0
    )
    parts = sorted(tmp_path.glob("requests.part*.jsonl"))
    assert [len(x.read_text().splitlines()) for x in parts] == [20, 20, 8]


@pytest.mark.parametrize(
    ("batch", "needle"),
    [
        ({"enabled": True, "retries": 2}, "unknown endpoint.batch key(s) ['retries']"),
        ({"retry": "later"}, "endpoint.batch.retry 'later'; valid: batch, online"),
        ({"max_lines": 0}, "endpoint.batch.max_lines must be >= 1"),
        ("yes", "endpoint.batch 'yes'; valid: true, false or a mapping"),
    ],
)
def test_bad_batch_settings_are_one_line(batch: Any, needle: str) -> None:
    model = load_group_option("model", MODEL)
    model["endpoint"] = {**model["endpoint"], "batch": batch}
    with pytest.raises(StylisticBiasError) as exc:
        endpoint_spec(model)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_batch_true_is_openai_limits_and_prices_checked() -> None:
    model = load_group_option("model", MODEL)
    model["endpoint"] = {**model["endpoint"], "batch": True}
    spec = endpoint_spec(model).batch
    assert spec.enabled and (spec.max_lines, spec.max_bytes) == (50_000, 200_000_000)
    model["prices"] = {"input_per_million": 1.0, "batch_discount": 1.5}
    with pytest.raises(StylisticBiasError, match=r"prices.batch_discount 1.5; valid"):
        endpoint_spec(model)
    model["prices"] = {
        "input_per_million": 1.0,
        "output_per_million": 4.0,
        "batch_input_per_million": 0.4,
    }
    prices = endpoint_spec(model).prices
    assert prices.batch_cost(1e6, 1e6) == pytest.approx(4.4)


_CHILD = """
import json, sys
from stylisticbias.judge.run import run_judge
from stylisticbias.spec.parse import config_from_params
params = json.load(open(sys.argv[1]))
run_judge(sys.argv[2], config_from_params(params), progress=False, out_dir=sys.argv[3])
"""


# slow tier: a judge subprocess (~10 CPU-s of imports); the in-process kill above is its fast
# sibling
@pytest.mark.slow
def test_sigkill_while_in_progress_then_rerun_polls_the_same_job(
    tables: dict[str, Any], server: BatchLoopback, online_reference: Any, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import sys
    import time

    want = online_reference("generate")
    p = params_for(
        tables,
        server.url,
        tmp_path / "cache.sqlite",
        decoding="generate",
        batch={"poll_interval_s": 0.05},
    )
    (tmp_path / "params.json").write_text(json.dumps(p))
    out = tmp_path / "b" / MODEL
    server.hold = True
    root = Path(__file__).resolve().parents[4]
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path / "params.json"), MODEL, str(out)], env=env
    )
    try:
        deadline = time.monotonic() + 300  # a safety net only: the child polls in ~10 s
        while not (server.batches and max(server.polls.values(), default=0) >= 3):
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    (bid,) = server.batches
    assert [j["batch_id"] for j in ledger(out)] == [bid]
    polls = server.polls[bid]
    server.hold = False
    judge(p, tmp_path / "b")
    assert (out / "judgments.parquet").read_bytes() == want
    assert list(server.batches) == [bid] and server.polls[bid] > polls
    assert set(server.received.values()) == {1} and sum(server.online.values()) == 0
