"""Task protocols (REFLECT, VIGNETTE) judged by the ``openai`` engine with ``endpoint.batch``,
against the Batch-API loopback server (:mod:`stylisticbias_dev.openai_batch_loopback`, in this
process; polling waits with a counting no-op):

* the task records are byte-identical to the online mode's, 0 requests sent online, every
  line received once; the exact label distributions ask one job per round;
* a rerun submits nothing (finished records; and records removed: every answer in the cache).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from task_project import task_project

from stylisticbias.judge.engines.openai import batch as batch_mod
from stylisticbias.judge.run import run_judge
from stylisticbias.spec.parse import config_from_params
from stylisticbias_dev.openai_batch_loopback import BatchLoopback

MODEL = "tiny-llava-next-vllm"
PROBS = {"A": 0.3, "B": 0.25, "C": 0.2, "D": 0.1, "E": 0.05, "F": 0.04, "maybe": 0.06}
PLANTED_LOGPROBS = {"": [[t, math.log(p)] for t, p in PROBS.items()], "*": [["</s>", 0.0]]}
SALARY = "recommend an annual salary"
NUMBERS = ["$85,000", "Between $50k and $60k.", "$5", "$120,000"]


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Polling waits with a recorder, never for real."""
    slept: list[float] = []
    monkeypatch.setattr(batch_mod, "SLEEP", slept.append)
    return slept


def _params(base: dict[str, Any], url: str, where: Path, batch: bool) -> dict[str, Any]:
    p = json.loads(json.dumps(base))
    p["paths"]["judgments"] = str(where / "judgments")
    model = p["models"][MODEL]
    caps = {**model["endpoint"]["capabilities"], "batch_chat": False}
    batch_cfg = {"enabled": batch, "poll_interval_s": 30.0}
    model["endpoint"] = {
        **model["endpoint"],
        "base_url": url,
        "api_key_env": None,
        "capabilities": caps,
        "batch": batch_cfg,
    }
    model["engine"] = {**model["engine"], "cache": str(where / "cache.sqlite")}
    return p


@pytest.mark.parametrize(
    ("experiment", "tasks"),
    [("reflect-demo", "[1,11,21]"), ("vignette-demo", "[101,4021]")],
    ids=["reflect", "vignette"],
)
def test_task_protocol_through_batch_is_byte_identical_to_online(
    tmp_path: Path, experiment: str, tasks: str, no_sleep: list[float]
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    base = task_project(
        root,
        experiment,
        MODEL,
        4,
        [
            f"judge.scenarios={tasks}",
            "judge.temperature=1.0",
            f"models.{MODEL}.engine.decoding=sampled",
            f"models.{MODEL}.engine.progress=false",
            f"models.{MODEL}.engine.exact_paths=0",
        ],
    )
    faces = pd.read_parquet(root / "faces" / "faces.parquet").sort_values("face_id")
    planted = [
        {"image": sha, "contains": SALARY, "content": n} for sha, n in zip(faces["sha256"], NUMBERS)
    ]
    cfg = {"planted": planted, "planted_logprobs": PLANTED_LOGPROBS}
    with BatchLoopback(cfg, served="tiny-llava-next") as server:
        online = run_judge(
            MODEL,
            config_from_params(_params(base, server.url, tmp_path / "online", False)),
            progress=False,
        )
        assert sum(server.online.values()) > 0 and not server.batches
        want = online.read_bytes()
        server.online.clear()

        p = _params(base, server.url, tmp_path / "batch", True)
        out = run_judge(MODEL, config_from_params(p), progress=False)
        assert out.read_bytes() == want
        assert sum(server.online.values()) == 0  # every response from a batch output file
        assert server.received and set(server.received.values()) == {1}
        jobs = json.loads((out.parent / "batch" / "ledger.json").read_text())["jobs"]
        assert {j["status"] for j in jobs} == {"completed"}
        assert len(jobs) >= 2  # exact: a partial answer is asked in the next round
        assert [j["round"] for j in jobs] == list(range(1, len(jobs) + 1))  # one job per round
        assert sum(j["done"] for j in jobs) == len(server.received)
        assert no_sleep and set(no_sleep) == {30.0}
        run = json.loads((out.parent.parent / f"{out.parent.name}.run.json").read_text())
        (stats,) = run["engine_stats"]
        assert stats["api_requests"] == 0
        assert stats["api_batch_lines_done"] == len(server.received)
        assert [j["batch_id"] for j in run["batch_jobs"]] == [j["batch_id"] for j in jobs]

        # a rerun: the records are finished, nothing submitted
        n_jobs = len(server.batches)
        again = run_judge(MODEL, config_from_params(p), progress=False)
        assert again.read_bytes() == want and len(server.batches) == n_jobs
        # records removed: judged again from the cache, nothing submitted nor sent
        out.unlink()
        again = run_judge(MODEL, config_from_params(p), progress=False)
        assert again.read_bytes() == want and len(server.batches) == n_jobs
        assert sum(server.online.values()) == 0


def test_gather_all_runs_every_awaitable_and_raises_a_real_error_first() -> None:
    import asyncio

    ran: list[str] = []

    async def missing() -> None:
        ran.append("missing")
        raise batch_mod.Missing("k")

    async def broken() -> None:
        await asyncio.sleep(0)
        ran.append("broken")
        raise ValueError("bad")

    async def fine() -> int:
        await asyncio.sleep(0)
        ran.append("fine")
        return 1

    with pytest.raises(ValueError, match="bad"):
        asyncio.run(batch_mod.gather_all(missing(), broken(), fine()))
    assert sorted(ran) == ["broken", "fine", "missing"]  # none cancelled
    with pytest.raises(batch_mod.Missing):
        asyncio.run(batch_mod.gather_all(fine(), missing()))
    assert asyncio.run(batch_mod.gather_all(fine(), fine())) == [1, 1]


def test_task_protocol_export_run_batch_import_then_stage_sends_nothing(
    tmp_path: Path, no_sleep: list[float]
) -> None:
    """Offline batch files for a task protocol: ``judge.batch export`` writes every task prompt
    the stage will ask (faces and pairs, composites inline), ``vllm run-batch`` answers it,
    ``import`` fills the cache; the stage then sends nothing and its records equal the online
    mode's byte for byte."""
    from stylisticbias.judge import batch as batch_cli
    from stylisticbias_dev.openai_batch_loopback import run_batch

    root = tmp_path / "proj"
    root.mkdir()
    base = task_project(
        root,
        "reflect-demo",
        MODEL,
        4,
        [
            "judge.scenarios=[1,21]",
            "judge.temperature=1.0",
            f"models.{MODEL}.engine.decoding=sampled",
            f"models.{MODEL}.engine.progress=false",
            f"models.{MODEL}.engine.exact_paths=0",
        ],
    )
    faces = pd.read_parquet(root / "faces" / "faces.parquet").sort_values("face_id")
    planted = [
        {"image": sha, "contains": SALARY, "content": n}
        for sha, n in zip(faces["sha256"], NUMBERS, strict=False)
    ]
    cfg = {"planted": planted, "planted_logprobs": PLANTED_LOGPROBS}
    with BatchLoopback(cfg, served="tiny-llava-next") as server:
        online = run_judge(
            MODEL,
            config_from_params(_params(base, server.url, tmp_path / "online", False)),
            progress=False,
        )
        want = online.read_bytes()
        server.online.clear()
        p = _params(base, server.url, tmp_path / "offline", False)
        params_file = tmp_path / "params.json"
        params_file.write_text(json.dumps(p))
        rounds = 0
        while True:  # exact label distributions: one export/import per round
            rounds += 1
            f = tmp_path / f"requests-{rounds}.jsonl"
            assert batch_cli.main(["export", MODEL, str(f), "--params", str(params_file)]) == 0
            if not f.exists():
                break
            answers = tmp_path / f"answers-{rounds}.jsonl"
            run_batch(f, answers, server.cfg, "tiny-llava-next")
            args = ["import", MODEL, str(answers), "--params", str(params_file)]
            assert batch_cli.main(args) == 0
            assert rounds < 20
        assert rounds > 2 and sum(server.online.values()) == 0
        out = run_judge(MODEL, config_from_params(p), progress=False)
        assert out.read_bytes() == want
        assert sum(server.online.values()) == 0  # every answer came from the imported files


def test_batch_files_of_an_unjudged_protocol_are_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from stylisticbias.judge import batch as batch_cli

    f = tmp_path / "x.jsonl"
    rc = batch_cli.main(["export", MODEL, str(f), "protocol=soda"])
    assert rc == 2 and not f.exists()
    assert "family soda is the generator audit's protocol" in capfd.readouterr().err
