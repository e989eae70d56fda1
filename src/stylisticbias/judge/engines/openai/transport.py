"""Polite async transport to one OpenAI-compatible endpoint, in front of the response cache.

* bounded concurrency (``asyncio.Semaphore``), connect/read timeouts (``httpx2``);
* retries with exponential backoff and jitter on 408/425/429/5xx, connection errors, timeouts
  and malformed bodies, waiting at least what ``Retry-After`` asks;
* optional requests-per-minute and tokens-per-minute limits, one limiter per endpoint for the
  whole run (:func:`endpoint_limiter`);
* a refusal or content-filter answer (``finish_reason: content_filter``, a ``refusal`` message,
  or a 400 whose error code says content filter) is a *result*: stored and recorded as invalid
  with its reason, never retried;
* every result is written to the :class:`~.cache.ResponseCache` the moment it arrives.

The API key is read from the environment when the client opens, lives only in the client's
headers, and is scrubbed from every error message.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.openai.cache import ResponseCache
from stylisticbias.judge.engines.openai.spec import EndpointSpec, TransportSpec

log = logging.getLogger(__name__)
T = TypeVar("T")
logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per request otherwise

RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529}
REFUSAL_FINISH = {
    "content_filter",
    "safety",
    "prohibited_content",
    "blocklist",
    "recitation",
    "spii",
}
REFUSAL_CODES = {"content_filter", "content_policy_violation", "responsibleaipolicyviolation"}
MAX_RETRY_AFTER_S = 600.0


class MalformedResponse(Exception):
    """A 200 whose body is not a chat completion (retried)."""


@dataclass
class TransportStats:
    """Counters of one engine (summed into the run log and MLflow)."""

    requests: int = 0  # answered requests sent to the server (not counting retries)
    cached: int = 0  # results served from the cache
    retries: int = 0
    refusals: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retry_reasons: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Flat numbers (``api_`` prefix) for ``last_stats``."""
        return {
            "api_requests": self.requests,
            "api_cached": self.cached,
            "api_retries": self.retries,
            "api_refusals": self.refusals,
            "api_prompt_tokens": self.prompt_tokens,
            "api_completion_tokens": self.completion_tokens,
            **{f"api_retries_{k}": v for k, v in sorted(self.retry_reasons.items())},
        }


@dataclass(frozen=True)
class ApiRequest:
    """One request: the body as sent, its cache key and what the cache row records."""

    key: str
    body: Mapping[str, Any]
    image_sha256: str | None
    kind: str  # "generate" | "logprobs"
    est_tokens: int  # prompt estimate + max_tokens, for the tokens-per-minute limit
    url: str | None = None  # where it is posted (None: the endpoint's chat-completions URL)


class RateLimiter:
    """Requests-per-minute spacing and a tokens-per-minute bucket (both optional).

    Each :meth:`acquire` reserves the earliest moment its request fits both limits (under a
    thread lock, never across an ``await``) and then sleeps until that moment, so one limiter
    serves every event loop of the process -- the engine runs one ``asyncio.run`` per image
    batch, and :func:`endpoint_limiter` hands each batch the same limiter. ``window_s`` is the
    limits' minute: ``rpm`` requests and ``tpm`` tokens per ``window_s`` seconds (60; a test
    shortens it so the limits bind within seconds). ``clock`` (seconds, ``time.monotonic``) is
    what "now" means to the reservations; a test passes its own to read or drive it.
    """

    def __init__(
        self,
        rpm: float | None,
        tpm: float | None,
        *,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window_s = float(window_s)  # the limits' "minute"
        self.interval = self.window_s / rpm if rpm else 0.0
        self.tpm = float(tpm) if tpm else None
        self._clock = clock
        self._next = 0.0  # earliest start of the next request (rpm)
        self._tokens = self.tpm or 0.0  # bucket level at ``_stamp``
        self._stamp = clock()
        self._lock = threading.Lock()

    def reserve(self, tokens: int) -> float:
        """Book one request of ``tokens`` tokens; the seconds to wait before sending it."""
        if not self.interval and self.tpm is None:
            return 0.0
        with self._lock:
            now = self._clock()
            start = max(now, self._next, self._stamp if self.tpm is not None else 0.0)
            if self.tpm is not None:
                need = min(float(tokens), self.tpm)
                refill = (start - self._stamp) * self.tpm / self.window_s
                level = min(self.tpm, self._tokens + refill)
                if level < need:
                    start += (need - level) * self.window_s / self.tpm
                    level = need
                self._tokens = level - need
                self._stamp = start
            self._next = start + self.interval
            return start - now

    async def acquire(self, tokens: int) -> None:
        """Wait until one more request of ``tokens`` tokens fits the limits."""
        wait = self.reserve(tokens)
        if wait > 0:
            await asyncio.sleep(wait)


#: seconds in the "minute" of ``rpm``/``tpm``: 60 (tests shorten it to see the limits bind across
#: a whole run in seconds instead of minutes)
WINDOW_S = 60.0

_LIMITERS: dict[tuple[str, str, float | None, float | None, float], RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def endpoint_limiter(endpoint: EndpointSpec, spec: TransportSpec) -> RateLimiter:
    """The process's one limiter of ``endpoint`` (URL and served model) at ``spec``'s limits.

    Shared by every :class:`Transport` of that endpoint for the whole run, so the requests of
    every image batch draw on one RPM spacing and one TPM bucket (a fresh limiter per batch
    would hand each batch a full bucket). Each process of a multi-process run has its own.
    """
    key = (endpoint.url, endpoint.served_model, spec.rpm, spec.tpm, WINDOW_S)
    with _LIMITERS_LOCK:
        lim = _LIMITERS.get(key)
        if lim is None:
            lim = _LIMITERS[key] = RateLimiter(spec.rpm, spec.tpm, window_s=WINDOW_S)
        return lim


def retry_after_seconds(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """``Retry-After`` (seconds or an HTTP date, counted from ``now()``, Unix seconds) or
    ``retry-after-ms``, in seconds."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    v = headers.get("retry-after")
    if not v:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


def backoff_delay(attempt: int, spec: TransportSpec, retry_after: float | None) -> float:
    """Exponential backoff with equal jitter, at least ``Retry-After``."""
    cap = min(spec.backoff_max_s, spec.backoff_base_s * (2.0**attempt))
    delay = cap / 2.0 + random.uniform(0.0, cap / 2.0)
    if retry_after is not None:
        delay = max(delay, min(retry_after, MAX_RETRY_AFTER_S))
    return delay


def normalise(data: Any) -> dict[str, Any]:
    """The parts of a chat completion the engine needs (what the cache stores).

    ``{"content", "finish_reason", "refusal", "top_logprobs", "usage"}``; ``top_logprobs`` is the
    first generated position's ``[[token, logprob], ...]`` (or None when absent). A response with
    several positions or choices also has ``paths``: per choice, its tokens with their top
    lists (``[[token, [[token, logprob], ...]], ...]``).
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("choices"), list):
        raise MalformedResponse("no 'choices' list")
    if not data["choices"]:
        raise MalformedResponse("empty 'choices'")
    ch = data["choices"][0]
    if not isinstance(ch, Mapping):
        raise MalformedResponse("choice is not an object")
    msg = ch.get("message") or {}
    if not isinstance(msg, Mapping):
        raise MalformedResponse("message is not an object")
    content = msg.get("content")
    if isinstance(content, list):  # some servers return content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    if content is not None and not isinstance(content, str):
        raise MalformedResponse("message.content is not text")
    finish = ch.get("finish_reason")
    refusal = msg.get("refusal") or None
    if refusal is None and isinstance(finish, str) and finish.lower() in REFUSAL_FINISH:
        refusal = f"finish_reason={finish}"
    paths = [_path(c) for c in data["choices"]]
    top = paths[0][0][1] if paths[0] else None
    usage = data.get("usage") or {}
    out = {
        "content": content,
        "finish_reason": finish,
        "refusal": str(refusal)[:500] if refusal else None,
        "top_logprobs": top,
        "usage": {
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
        },
    }
    if len(paths) > 1 or len(paths[0]) > 1:  # several positions or choices: the answer paths
        out["paths"] = paths
        out["choice_refusals"] = [_choice_refusal(c) for c in data["choices"]]
    return out


def _choice_refusal(ch: Mapping[str, Any]) -> str | None:
    """A choice's refusal (its ``refusal`` field or a content-filter finish), else None."""
    msg = ch.get("message") or {}
    refusal = msg.get("refusal") if isinstance(msg, Mapping) else None
    finish = ch.get("finish_reason")
    if not refusal and isinstance(finish, str) and finish.lower() in REFUSAL_FINISH:
        refusal = f"finish_reason={finish}"
    return str(refusal)[:500] if refusal else None


def _path(ch: Any) -> list[list[Any]]:
    """``[[token, [[token, logprob], ...]], ...]``: one choice's tokens with their top lists."""
    if not isinstance(ch, Mapping):
        raise MalformedResponse("choice is not an object")
    lp = ch.get("logprobs")
    if not isinstance(lp, Mapping) or not isinstance(lp.get("content"), list):
        return []
    out: list[list[Any]] = []
    for i, pos in enumerate(lp["content"]):
        if not isinstance(pos, Mapping) or not isinstance(pos.get("top_logprobs"), list):
            raise MalformedResponse(f"logprobs.content[{i}] has no top_logprobs list")
        try:
            top = [[str(t["token"]), float(t["logprob"])] for t in pos["top_logprobs"]]
        except (KeyError, TypeError, ValueError) as e:
            raise MalformedResponse(f"logprobs.content[{i}].top_logprobs: {e}") from None
        out.append([str(pos.get("token", "")), top])
    return out


def _refusal_from_error(resp: httpx2.Response) -> str | None:
    """A 400 that is a content-filter decision (Azure, OpenAI), else None."""
    if resp.status_code != 400:
        return None
    try:
        err = resp.json().get("error") or {}
    except (ValueError, AttributeError):
        return None
    code = str(err.get("code") or "").lower() if isinstance(err, Mapping) else ""
    inner = err.get("innererror") if isinstance(err, Mapping) else None
    inner_code = str((inner or {}).get("code") or "").lower() if isinstance(inner, Mapping) else ""
    if code in REFUSAL_CODES or inner_code in REFUSAL_CODES:
        return f"error={code or inner_code}"
    return None


async def gather_or_cancel(*aws: Awaitable[T]) -> list[T]:
    """``asyncio.gather``, except that when one awaitable fails the others are cancelled and
    awaited before the failure propagates.

    A plain ``gather`` raises the first failure at once and leaves its siblings running: the
    caller then closes the :class:`Transport` under requests still in flight, which fail
    against the closed client while ``asyncio.run`` shuts down and asyncio prints their
    tracebacks. Every fan-out over a transport goes through this function, at every level, so
    a request that exhausts its retries ends the run with its one error line.
    """
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # all done before we go on
        raise


class Transport:
    """Async client of one endpoint: ``async with Transport(...) as t: await t.fetch(r)``."""

    def __init__(
        self,
        endpoint: EndpointSpec,
        spec: TransportSpec,
        cache: ResponseCache,
        stats: TransportStats,
        on_result: Callable[[bool], None] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.spec = spec
        self.cache = cache
        self.stats = stats
        self.on_result = on_result
        self._sem = asyncio.Semaphore(spec.concurrency)
        self._limiter = endpoint_limiter(endpoint, spec)
        self._client: httpx2.AsyncClient | None = None
        self._secret: str | None = None
        self._inflight: dict[str, asyncio.Future[dict[str, Any]]] = {}

    async def __aenter__(self) -> Transport:
        key = self.endpoint.api_key()
        self._secret = key
        headers = dict(self.endpoint.headers)
        if key:
            if self.endpoint.backend == "azure":
                headers["api-key"] = key
            else:
                headers["Authorization"] = f"Bearer {key}"
        params = {"api-version": self.endpoint.api_version} if self.endpoint.api_version else None
        self._client = httpx2.AsyncClient(
            headers=headers,
            params=params,
            timeout=httpx2.Timeout(self.spec.read_timeout_s, connect=self.spec.connect_timeout_s),
            limits=httpx2.Limits(
                max_connections=self.spec.concurrency,
                max_keepalive_connections=self.spec.concurrency,
            ),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()
        self._client = None
        self._secret = None

    def scrub(self, text: str) -> str:
        """``text`` with the API key (if any) replaced by ``***``."""
        return text.replace(self._secret, "***") if self._secret else text

    async def fetch(self, req: ApiRequest) -> dict[str, Any]:
        """The normalised result of ``req``: from the cache, else from the server (then cached).

        Identical requests in flight at the same time are sent once.
        """
        pending = self._inflight.get(req.key)
        if pending is not None:
            return await asyncio.shield(pending)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._inflight[req.key] = fut
        try:
            result = await self._fetch(req)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                fut.cancel()  # those waiting for the same request are cancelled with it
            else:
                fut.set_exception(exc)
                fut.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            self._inflight.pop(req.key, None)
        fut.set_result(result)
        return result

    async def _fetch(self, req: ApiRequest) -> dict[str, Any]:
        hit = self.cache.get(req.key)
        if hit is not None:
            self.stats.cached += 1
            if self.on_result:
                self.on_result(True)
            return hit
        async with self._sem:
            result = await self._send(req)
        usage = result["usage"]
        self.cache.put(
            req.key,
            result,
            endpoint=self.endpoint.base_url,
            served_model=self.endpoint.served_model,
            image_sha256=req.image_sha256,
            kind=req.kind,
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
        )
        self.stats.requests += 1
        self.stats.prompt_tokens += usage["prompt_tokens"]
        self.stats.completion_tokens += usage["completion_tokens"]
        if result["refusal"]:
            self.stats.refusals += 1
        if self.on_result:
            self.on_result(False)
        return result

    def _retry(self, why: str) -> None:
        self.stats.retries += 1
        self.stats.retry_reasons[why] = self.stats.retry_reasons.get(why, 0) + 1

    async def _send(self, req: ApiRequest) -> dict[str, Any]:
        assert self._client is not None, "use Transport as an async context manager"
        last = ""
        for attempt in range(self.spec.max_retries + 1):
            await self._limiter.acquire(req.est_tokens)
            retry_after: float | None = None
            try:
                resp = await self._client.post(req.url or self.endpoint.url, json=dict(req.body))
            except httpx2.TimeoutException as exc:
                why, last = "timeout", f"timeout ({type(exc).__name__})"
            except httpx2.TransportError as exc:
                why, last = "connection", f"connection error ({type(exc).__name__})"
            else:
                refusal = _refusal_from_error(resp)
                if refusal:
                    return {
                        "content": None,
                        "finish_reason": "content_filter",
                        "refusal": refusal,
                        "top_logprobs": None,
                        "usage": {"prompt_tokens": 0, "completion_tokens": 0},
                    }
                if resp.status_code == 200:
                    try:
                        return normalise(resp.json())
                    except (ValueError, MalformedResponse, KeyError, TypeError) as exc:
                        why, last = "malformed", f"malformed response ({exc})"
                elif resp.status_code in RETRY_STATUS:
                    why, last = str(resp.status_code), f"HTTP {resp.status_code}"
                    retry_after = retry_after_seconds(resp.headers)
                else:
                    raise StylisticBiasError(
                        self.scrub(
                            f"{self.endpoint.source}: {self.endpoint.host} answered HTTP "
                            f"{resp.status_code} for model {self.endpoint.served_model!r}: "
                            f"{resp.text[:300]}"
                        )
                    )
            if attempt == self.spec.max_retries:
                break
            self._retry(why)
            delay = backoff_delay(attempt, self.spec, retry_after)
            log.debug("retry %d of %s in %.2fs: %s", attempt + 1, req.key[:12], delay, last)
            await asyncio.sleep(delay)
        raise StylisticBiasError(
            self.scrub(
                f"{self.endpoint.source}: {self.endpoint.host} failed {self.spec.max_retries + 1} "
                f"time(s) ({last}); responses so far are cached, a rerun resumes"
            )
        )
