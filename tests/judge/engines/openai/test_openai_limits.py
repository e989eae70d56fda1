"""One RPM/TPM limiter per endpoint for the whole judge run, not one per image batch.

The judge stage runs the openai engine one image per Lightning batch over three images (three
``asyncio.run`` calls, three :class:`Transport` clients); the loopback server (planted answers,
no model) records when each request arrived. Every window of arrivals must fit one token bucket
of ``tpm`` tokens refilled at ``tpm`` per minute, and one request per ``1 / rpm`` minutes. The
limits' minute is shortened to ``WINDOW_S`` seconds (:data:`transport.WINDOW_S`) so they bind
within seconds: a limiter recreated per batch hands every batch a full bucket, and all 54
requests arrive within about 1.4 s (RPM spacing alone), where the shared bucket spreads the
last 24 over 2.4 s.
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
    engine = {**load_group_option("engine", "openai"), "cache": str(tmp / "cache.sqlite"),
              "progress": False, "decoding": "generate", "image_batch_size": 1,
              "transport": {**load_group_option("engine", "openai")["transport"],
                            "concurrency": 8, "rpm": RPM, "tpm": FIT * IMAGE_TOKENS}}  # fmt: skip
    params["models"] = {MODEL: {**model, "engine": engine}}
    return params


def test_one_limiter_for_every_image_batch_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "WINDOW_S", WINDOW_S)
    port = free_port()
    params = _params(tmp_path, f"http://127.0.0.1:{port}/v1")
    shas = {hashlib.sha256(Path(it.path).read_bytes()).hexdigest()
            for it in judge_items(config_from_params(params))}  # fmt: skip
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
    rate = FIT / WINDOW_S  # requests' worth of tokens refilled per second (tpm / WINDOW_S)
    slack = 0.25  # seconds: client-to-server latency differences between two requests
    # token bucket: any k consecutive arrivals need k - FIT refills between the first and last
    for i in range(n):
        for j in range(i + FIT, n):
            k = j - i + 1
            assert arrived[j] - arrived[i] >= (k - FIT) / rate - slack, (i, j, k)
    assert arrived[-1] - arrived[0] >= (n - FIT) / rate - slack
    # requests per minute: at most 1 + W / interval arrivals in any window W
    interval = WINDOW_S / RPM
    for i in range(n):
        for j in range(i + 1, n):
            w = arrived[j] - arrived[i]
            assert j - i <= (w + slack) / interval + 1, (i, j, w)


def test_endpoint_limiter_is_shared_per_endpoint_and_limits() -> None:
    cfg = {"name": "m", "endpoint": {"base_url": "http://h/v1", "served_model": "s"}}
    ep = endpoint_spec(cfg)
    other = endpoint_spec({**cfg, "endpoint": {**cfg["endpoint"], "served_model": "t"}})
    spec = transport_spec({"transport": {"rpm": 600}}, ep)
    assert endpoint_limiter(ep, spec) is endpoint_limiter(ep, spec)
    assert endpoint_limiter(other, spec) is not endpoint_limiter(ep, spec)


def test_limiter_spans_event_loops() -> None:
    """Two ``asyncio.run`` calls (two image batches) share one TPM bucket: the second waits."""
    lim = RateLimiter(rpm=None, tpm=6000, window_s=6.0)  # 1000 tokens/s, bucket starts full

    async def batch(tokens: int) -> None:
        await lim.acquire(tokens)

    t0 = time.monotonic()
    asyncio.run(batch(6000))  # empties the bucket
    asyncio.run(batch(100))  # a fresh limiter would send it at once; the shared one refills first
    assert time.monotonic() - t0 >= 0.095
