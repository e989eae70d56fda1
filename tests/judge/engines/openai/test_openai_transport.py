"""Transport pieces that need no server: Retry-After, backoff, refusals, malformed bodies, RPM."""

from __future__ import annotations

import asyncio
import email.utils

import pytest

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.openai.spec import TransportSpec, endpoint_spec, transport_spec
from stylisticbias.judge.engines.openai.transport import (
    MalformedResponse,
    RateLimiter,
    backoff_delay,
    normalise,
    retry_after_seconds,
)
from stylisticbias.judge.protocol.parsing import parse_response


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    date = email.utils.formatdate(1_700_000_030, usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=lambda: 1_700_000_000.0) == 30.0
    assert retry_after_seconds({"retry-after": date}, now=lambda: 1_700_000_100.0) == 0.0
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"retry-after": "soon"}) is None


def test_backoff_grows_with_jitter_and_honours_retry_after() -> None:
    spec = TransportSpec(backoff_base_s=1.0, backoff_max_s=8.0)
    for attempt, cap in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 8.0)]:
        ds = [backoff_delay(attempt, spec, None) for _ in range(200)]
        assert min(ds) >= cap / 2 and max(ds) <= cap and len(set(ds)) > 100  # jittered
    assert all(backoff_delay(0, spec, 5.0) >= 5.0 for _ in range(50))


def test_normalise_refusals_and_malformed() -> None:
    ok = {
        "choices": [{"message": {"content": "(a)"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3},
    }
    n = normalise(ok)
    assert n["content"] == "(a)" and n["refusal"] is None and n["usage"]["prompt_tokens"] == 7
    cf = {"choices": [{"message": {"content": None}, "finish_reason": "content_filter"}]}
    assert normalise(cf)["refusal"] == "finish_reason=content_filter"
    rf = {
        "choices": [
            {
                "message": {"content": None, "refusal": "I can't judge people."},
                "finish_reason": "stop",
            }
        ]
    }
    assert normalise(rf)["refusal"] == "I can't judge people."
    bads = [
        {},
        {"choices": []},
        {"choices": ["x"]},
        {"choices": [{"message": {"content": 3}}]},
        {"choices": [{"message": {}, "logprobs": {"content": [{"token": "a"}]}}]},
    ]
    for bad in bads:
        with pytest.raises(MalformedResponse):
            normalise(bad)


def test_reasoning_content_is_not_the_answer() -> None:
    """A served reasoning model's separate ``reasoning_content`` never reaches the parser: the
    answer is ``content``; reasoning that used up the tokens leaves no answer (invalid)."""
    msg = {"content": "(b)", "reasoning_content": "Maybe (a)? Not sure."}
    n = normalise({"choices": [{"message": msg, "finish_reason": "stop"}]})
    assert parse_response(n["content"]) == "b"
    cut = {"content": None, "reasoning_content": "The person looks (a"}
    n = normalise({"choices": [{"message": cut, "finish_reason": "length"}]})
    assert parse_response(n["content"]) is None


class _FakeClock:
    """A clock that moves only when a test (or a recorded ``asyncio.sleep``) moves it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_rate_limiter_spaces_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _FakeClock()
    monkeypatch.setattr(asyncio, "sleep", clock.sleep)
    lim = RateLimiter(rpm=1200, tpm=None, clock=clock)  # one request per 50 ms

    async def go() -> None:
        for _ in range(5):
            await lim.acquire(1)

    asyncio.run(go())
    assert clock.slept == pytest.approx([0.05] * 4)  # the first at once, then 50 ms apart
    clock.now += 1.0  # a quiet second: the next one goes at once
    assert lim.reserve(1) == 0.0


def test_tokens_per_minute_bucket_waits() -> None:
    clock = _FakeClock()
    lim = RateLimiter(rpm=None, tpm=6000, clock=clock)  # 100 tokens/s, bucket starts full
    assert lim.reserve(6000) == 0.0  # empties the bucket
    assert lim.reserve(20) == pytest.approx(0.2)  # needs 0.2 s of refill
    clock.now += 0.2 + 0.5  # the booking above, then 50 tokens' worth of refill
    assert lim.reserve(50) == pytest.approx(0.0)
    assert lim.reserve(10) == pytest.approx(0.1)


def test_endpoint_errors_are_one_line_and_name_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    base = {"name": "m", "endpoint": {"base_url": "http://h/v1", "served_model": "s"}}
    with pytest.raises(StylisticBiasError, match=r"conf/model/m\.yaml.*endpoint\.headers"):
        endpoint_spec(
            {**base, "endpoint": {**base["endpoint"], "headers": {"Authorization": "Bearer x"}}}
        )
    with pytest.raises(StylisticBiasError, match="backend 'nope'; valid: vllm"):
        endpoint_spec({**base, "endpoint": {**base["endpoint"], "backend": "nope"}})
    with pytest.raises(StylisticBiasError, match=r"missing endpoint\.served_model"):
        endpoint_spec({"name": "m", "endpoint": {"base_url": "http://h/v1"}})
    spec = endpoint_spec(
        {
            **base,
            "endpoint": {**base["endpoint"], "api_key_env": "NO_SUCH_VAR_X", "limits": {"rpm": 30}},
        }
    )
    monkeypatch.delenv("NO_SUCH_VAR_X", raising=False)
    with pytest.raises(StylisticBiasError, match=r"NO_SUCH_VAR_X.*not set"):
        spec.api_key()
    assert transport_spec({"transport": {"rpm": None, "concurrency": 3}}, spec).rpm == 30
    with pytest.raises(StylisticBiasError, match="unknown key"):
        transport_spec({"transport": {"concurency": 3}}, spec)


def test_every_openai_model_file_parses() -> None:
    """The backend examples in conf/model (and the README copies) are valid endpoint specs."""
    from stylisticbias.config import available, load_models

    seen = set()
    names = available("model")
    models = load_models(names)  # one composition of every model file
    assert sorted(models) == names
    for name in names:
        cfg = models[name]
        if cfg["engine"]["name"] == "openai":
            spec = endpoint_spec(cfg)
            seen.add(spec.backend)
            assert "key" not in str(cfg.get("endpoint", {}).get("headers", {})).lower()
    assert {
        "vllm",
        "sglang",
        "ollama",
        "azure",
        "vertex",
        "openai",
        "openrouter",
        "litellm",
        "transformers-serve",
    } <= seen


def test_report_names_engine_endpoint_host_and_served_model() -> None:
    import pandas as pd

    from stylisticbias.config import compose
    from stylisticbias.report.inputs import _model_info
    from stylisticbias.spec.parse import config_from_params

    config = config_from_params(compose(["model=[vllm-gemma-3-12b]"]))
    info = _model_info("vllm-gemma-3-12b", pd.DataFrame({"simulated": [False]}), config)
    assert info.hub_id == "google/gemma-3-12b-it @ localhost:8000 (engine openai)"


def test_content_filter_400_is_a_refusal_other_400s_are_not() -> None:
    import httpx2

    from stylisticbias.judge.engines.openai.transport import _refusal_from_error

    azure = {"error": {"code": "content_filter", "message": "The response was filtered"}}
    inner = {
        "error": {"code": "BadRequest", "innererror": {"code": "ResponsibleAIPolicyViolation"}}
    }
    assert _refusal_from_error(httpx2.Response(400, json=azure)) == "error=content_filter"
    assert _refusal_from_error(httpx2.Response(400, json=inner)) is not None
    assert _refusal_from_error(httpx2.Response(400, json={"error": {"code": "bad"}})) is None
    assert _refusal_from_error(httpx2.Response(429, json=azure)) is None
    assert _refusal_from_error(httpx2.Response(400, text="not json")) is None
