"""One RPM/TPM limiter per endpoint for the whole judge run, not one per image batch.

The judge stage runs the openai engine one image per Lightning batch over three images (three
``asyncio.run`` calls, three :class:`Transport` clients); the loopback server (planted answers,
no model) records when each request arrived. Every window of booked requests must fit one
token bucket of ``tpm`` tokens refilled at ``tpm`` per minute, and one request per
``1 / rpm`` minutes. The limits' minute is shortened to ``WINDOW_S`` seconds
(:data:`transport.WINDOW_S`) so they bind within seconds: a limiter recreated per batch hands
every batch a full bucket, and all 54 requests arrive within about 1.4 s (RPM spacing alone),
where the shared bucket spreads the last 24 over 2.4 s. The limits are checked on the starts
the limiter booked (read through its ``clock``), not on arrival times a loaded machine could
bunch; the server's arrival times only show that no request went out before its booked start.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from judge_tables import make_tables
from servers import answered, free_port, start_loopback, stop

from stylisticbias.config import load_group_option
from stylisticbias.judge.engines.openai import transport
from stylisticbias.judge.engines.openai.spec import endpoint_spec, transport_spec
from stylisticbias.judge.engines.openai.transport import RateLimiter, endpoint_limiter
from stylisticbias.judge.items import judge_items
from stylisticbias.judge.run import run_judge
from stylisticbias.spec.parse import config_from_params

MODEL = "tiny-llava-next-vllm"
IMAGE_TOKENS = 20_000  # per request: the text and max_tokens add < 2% (est_tokens)
WINDOW_S = 3.0  # the limits' "minute" in this test
FIT = 30  # requests the full bucket holds (tpm = FIT * IMAGE_TOKENS), refilled at FIT / WINDOW_S
RPM = 132  # WINDOW_S / RPM = 22.7 ms between requests: unlimited, the first FIT come in ~0.25 s


def _params(tmp: Path, url: str) -> dict[str, Any]:
    params = make_tables(tmp / "tables", 2, values_per_face=1)  # 2 faces x (base + 1) images
    params["judge"].update(scenarios=[1, 23], orderings=[1, 2, 3], seeds=[1, 2, 3])
    os.environ["STYLISTICBIAS_LOOPBACK_URL"] = url
    os.environ.pop("STYLISTICBIAS_LOOPBACK_KEY_ENV", None)
    model = load_group_option("model", MODEL)
    model["endpoint"] = {**model["endpoint"], "image_tokens": IMAGE_TOKENS}
    engine = {
        **load_group_option("engine", "openai"),
        "cache": str(tmp / "cache.sqlite"),
        "progress": False,
        "decoding": "generate",
        "image_batch_size": 1,
        "transport": {
            **load_group_option("engine", "openai")["transport"],
            "concurrency": 8,
            "rpm": RPM,
            "tpm": FIT * IMAGE_TOKENS,
        },
    }
    params["models"] = {MODEL: {**model, "engine": engine}}
    return params


class _Plan:
    """What the run's limiters booked: one entry per limiter made, one planned start per
    reservation (on the limiter's clock, and as a Unix time no later than the true one)."""

    def __init__(self) -> None:
        self.limiters = 0
        self.starts: list[float] = []
        self.wall_starts: list[float] = []


def _record_plans(monkeypatch: pytest.MonkeyPatch) -> _Plan:
    """Make every limiter the run creates record its reservations (through its ``clock``)."""
    plan = _Plan()

    class Recording(RateLimiter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.now = 0.0

            def clock() -> float:
                self.now = time.monotonic()
                return self.now

            super().__init__(*args, clock=clock, **kwargs)
            plan.limiters += 1

        def reserve(self, tokens: int) -> float:
            # time.time() read first: the offset is at most the true one, so a planned start
            # converted with it is never later than the real moment
            offset = time.time() - time.monotonic()
            wait = super().reserve(tokens)
            plan.starts.append(self.now + wait)
            plan.wall_starts.append(self.now + wait + offset)
            return wait

    monkeypatch.setattr(transport, "RateLimiter", Recording)
    monkeypatch.setattr(transport, "_LIMITERS", {})
    return plan


def test_one_limiter_for_every_image_batch_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limits hold over the whole run, checked on what the limiter booked (exact, however
    loaded the machine) and on the server: no request arrives before its booked start."""
    monkeypatch.setattr(transport, "WINDOW_S", WINDOW_S)
    plan = _record_plans(monkeypatch)
    port = free_port()
    params = _params(tmp_path, f"http://127.0.0.1:{port}/v1")
    shas = {
        hashlib.sha256(Path(it.path).read_bytes()).hexdigest()
        for it in judge_items(config_from_params(params))
    }
    planted = [{"image": sha, "contains": "", "content": "(a)"} for sha in sorted(shas)]
    log = tmp_path / "answered.jsonl"
    proc = start_loopback(port, faults={"planted": planted}, log=log, with_model=False)
    try:
        out = run_judge(
            MODEL, config_from_params(params), progress=False, out_dir=tmp_path / "j" / MODEL
        )
    finally:
        stop(proc)
    run_log = json.loads((out.parent / f"{MODEL}.run.json").read_text())
    images = {e["image"] for e in answered(log)}
    arrived = sorted(e["arrived"] for e in answered(log))
    n = len(arrived)
    assert len(images) >= 3 and n == 18 * len(images), (len(images), n, run_log)
    assert n > FIT + 18  # the bucket binds: 3 batches of 18 requests, each within a fresh bucket
    assert plan.limiters == 1  # one limiter for every image batch (Transport) of the run
    starts = sorted(plan.starts)
    assert len(starts) == n  # one booking per request: nothing sent unbooked
    rate = FIT / WINDOW_S  # requests' worth of tokens refilled per second (tpm / WINDOW_S)
    interval = WINDOW_S / RPM
    eps = 1e-6  # float rounding of the booked starts
    # token bucket: any k consecutive bookings need k - FIT refills between the first and last;
    # requests per minute: consecutive bookings at least one interval apart
    for i in range(n):
        for j in range(i + 1, n):
            k = j - i + 1
            assert starts[j] - starts[i] >= (k - FIT) / rate - eps, (i, j, k)
            assert starts[j] - starts[i] >= (j - i) * interval - eps, (i, j)
    assert starts[-1] - starts[0] >= (n - FIT) / rate - eps
    # every request waited for its booking: the k-th arrival is no earlier than the k-th booked
    # start (load only delays arrivals); 1 ms for the two processes' clock reads
    for got, booked in zip(arrived, sorted(plan.wall_starts), strict=True):
        assert got >= booked - 1e-3, (got, booked)


def test_endpoint_limiter_is_shared_per_endpoint_and_limits() -> None:
    cfg = {"name": "m", "endpoint": {"base_url": "http://h/v1", "served_model": "s"}}
    ep = endpoint_spec(cfg)
    other = endpoint_spec({**cfg, "endpoint": {**cfg["endpoint"], "served_model": "t"}})
    spec = transport_spec({"transport": {"rpm": 600}}, ep)
    assert endpoint_limiter(ep, spec) is endpoint_limiter(ep, spec)
    assert endpoint_limiter(other, spec) is not endpoint_limiter(ep, spec)


def test_limiter_spans_event_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ``asyncio.run`` calls (two image batches) share one TPM bucket: the second waits
    (seconds on a clock that moves only by the sleeps it records)."""
    now, slept = [1000.0], []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(asyncio, "sleep", sleep)
    # 1000 tokens/s, bucket starts full
    lim = RateLimiter(rpm=None, tpm=6000, window_s=6.0, clock=lambda: now[0])

    async def batch(tokens: int) -> None:
        await lim.acquire(tokens)

    asyncio.run(batch(6000))  # empties the bucket
    asyncio.run(batch(100))  # a fresh limiter would send it at once; the shared one refills first
    assert slept == [pytest.approx(0.1)]
