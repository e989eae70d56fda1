"""Provider batch jobs (OpenAI's Batch API shape) in front of the response cache.

A batch job is the same chat-completions requests as a JSONL file, one line each::

    {"custom_id": <cache key>, "method": "POST", "url": "/v1/chat/completions", "body": {...}}

uploaded through ``POST /files`` (``purpose: batch``), submitted through ``POST /batches`` and
answered, within the completion window, as an output file (and an error file) of lines
``{"custom_id", "response": {"status_code", "body"}, "error"}`` -- at about half the online
price. vLLM's ``run-batch`` reads and writes the same files offline.

:class:`BatchRunner` fills the :class:`~.cache.ResponseCache` this way before the engine judges:

* the engine says which requests it still needs (:meth:`BatchRunner.run`'s ``discover``: those
  not in the cache); they are written as JSONL parts within ``max_lines``/``max_bytes``
  (:class:`PartWriter`), uploaded and submitted, and every job is recorded at once in a
  ledger in the stage's output directory (:class:`Ledger`, written atomically), so a killed
  stage polls the same jobs when it runs again and never submits a line twice;
* the jobs are polled (progress: jobs and lines done, ETA; the clock and the sleep are
  injectable), and each finished job's output and error files are read line by line into the
  cache, matched on ``custom_id`` (:func:`import_lines`);
* a failed or expired line is asked again in a new job (``retry: batch``, at most
  ``max_resubmits`` times, then online) or online at once (``retry: online``);
* ``exact`` asks round by round (each round's partial answers depend on the last round's
  answers): each round is one job (more when it exceeds the limits), so a prompt's answer tree
  costs one completion window per level.

The engine then judges from the cache exactly as online (0 requests sent), so the records are
those of the online mode for the same answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

import httpx2

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.openai.cache import ResponseCache, canonical
from stylisticbias.judge.engines.openai.spec import BatchSpec, EndpointSpec, TransportSpec
from stylisticbias.judge.engines.openai.transport import (
    REFUSAL_CODES,
    RETRY_STATUS,
    ApiRequest,
    MalformedResponse,
    normalise,
)
from stylisticbias.outputs import atomic_write_json, atomic_write_text

log = logging.getLogger(__name__)

T = TypeVar("T")

#: job states after which nothing changes
TERMINAL = ("completed", "failed", "expired", "cancelled")
LEDGER = "ledger.json"
#: what polling waits with and reads the time from, where the caller passes none (a test
#: replaces them: nothing sleeps for real)
SLEEP: Callable[[float], None] = time.sleep
CLOCK: Callable[[], float] = time.monotonic


def line_url(endpoint: EndpointSpec) -> str:
    """The ``url`` of each line: ``endpoint.batch.url_path`` or the chat URL's path."""
    return endpoint.batch.url_path or urlparse(endpoint.url).path or "/v1/chat/completions"


def batch_line(req: ApiRequest, url: str) -> bytes:
    """One JSONL line (with its newline) of ``req``: its cache key is the ``custom_id``."""
    line = {"custom_id": req.key, "method": "POST", "url": url, "body": dict(req.body)}
    return (canonical(line) + "\n").encode("utf-8")


# ------------------------------------------------------------------------------ output lines
def line_result(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The normalised result (as the online transport caches it) of one output line, or None
    for a line that failed (no response, an HTTP error, a malformed body, an expiry).

    A 400 whose error code is a content filter is a refusal -- a result, as online."""
    resp = obj.get("response")
    if not isinstance(resp, Mapping):
        return None
    status = resp.get("status_code")
    body = resp.get("body")
    if status == 200:
        try:
            return normalise(body)
        except (MalformedResponse, KeyError, TypeError, ValueError):
            return None
    if status == 400 and isinstance(body, Mapping):
        err = body.get("error") or {}
        code = str(err.get("code") or "").lower() if isinstance(err, Mapping) else ""
        inner = err.get("innererror") if isinstance(err, Mapping) else None
        inner_code = str(inner.get("code") or "").lower() if isinstance(inner, Mapping) else ""
        if code in REFUSAL_CODES or inner_code in REFUSAL_CODES:
            return {
                "content": None,
                "finish_reason": "content_filter",
                "refusal": f"error={code or inner_code}",
                "top_logprobs": None,
                "usage": {"prompt_tokens": 0, "completion_tokens": 0},
            }
    return None


@dataclass
class ImportResult:
    """What reading one output (or error) file into the cache did."""

    done: int = 0  # lines stored in the cache
    failed: list[str] = field(default_factory=list)  # custom_ids without a result
    unknown: int = 0  # lines whose custom_id is no request of this run (skipped)
    refusals: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: ImportResult) -> None:
        """Fold ``other`` into this one."""
        self.done += other.done
        self.failed += other.failed
        self.unknown += other.unknown
        self.refusals += other.refusals
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens


def import_lines(
    lines: Iterable[str],
    cache: ResponseCache,
    endpoint: EndpointSpec,
    known: Mapping[str, tuple[str, str | None]] | None,
    *,
    source: str = "output file",
) -> ImportResult:
    """Store every answered line of a batch output file in ``cache`` (line by line).

    ``known`` maps each expected ``custom_id`` to its request's ``(kind, image_sha256)``; a
    line with another id is counted as unknown and skipped (None: every id is taken, kind
    ``batch``). A line that is not JSON is one error naming ``source`` and the line number.
    """
    out = ImportResult()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise StylisticBiasError(
                f"{source}: line {n} is not JSON; a batch output file has one JSON object per "
                "line ({custom_id, response: {status_code, body}, error})"
            ) from None
        key = obj.get("custom_id") if isinstance(obj, Mapping) else None
        if not isinstance(key, str):
            raise StylisticBiasError(f"{source}: line {n} has no custom_id")
        if known is not None and key not in known:
            out.unknown += 1
            continue
        kind, sha = known[key] if known is not None else ("batch", None)
        result = line_result(obj)
        if result is None:
            out.failed.append(key)
            continue
        usage = result["usage"]
        cache.put(
            key,
            result,
            endpoint=endpoint.base_url,
            served_model=endpoint.served_model,
            image_sha256=sha,
            kind=kind,
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
        )
        out.done += 1
        out.refusals += bool(result["refusal"])
        out.prompt_tokens += usage["prompt_tokens"]
        out.completion_tokens += usage["completion_tokens"]
    return out


# ------------------------------------------------------------------------------ discovery
class Missing(Exception):
    """A request the cache does not hold yet (raised by :class:`Collector`)."""


class Collector:
    """A stand-in for the online :class:`~.transport.Transport` that sends nothing: a cached
    result is returned, a request not in the cache is recorded and :class:`Missing` raised.

    The engine's judging code run through it records the requests it needs next: all of a
    ``generate`` run's, the current round's of an ``exact`` run (the requests of one round
    are started together, so each records before any raises).
    """

    def __init__(self, cache: ResponseCache) -> None:
        self.cache = cache
        self.requests: dict[str, ApiRequest] = {}

    async def fetch(self, req: ApiRequest) -> dict[str, Any]:
        """The cached result of ``req``; else it is recorded and :class:`Missing` raised."""
        hit = self.cache.get(req.key, touch=False)
        if hit is not None:
            return hit
        self.requests.setdefault(req.key, req)
        raise Missing(req.key)


async def gather_all(*aws: Awaitable[T]) -> list[T]:
    """``asyncio.gather`` for judging code run through a :class:`Collector`: every awaitable
    runs to its end (none is cancelled when a sibling raises :class:`Missing`), so each records
    all the requests it needs before the first failure propagates -- another error before a
    :class:`Missing`."""
    got = await asyncio.gather(*aws, return_exceptions=True)
    errors = [r for r in got if isinstance(r, BaseException)]
    if errors:
        raise next((e for e in errors if not isinstance(e, Missing)), errors[0])
    return list(got)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ input files
@dataclass
class Part:
    """One input file being written: its path, requests and size."""

    path: Path
    keys: list[tuple[str, str, str | None]] = field(default_factory=list)
    size: int = 0


class PartWriter:
    """JSONL parts of at most ``max_lines`` lines and ``max_bytes`` bytes each; ``on_full`` is
    called with each part as soon as it is complete (and with the last one by :meth:`close`)."""

    def __init__(
        self,
        new_path: Callable[[], Path],
        url: str,
        spec: BatchSpec,
        on_full: Callable[[Part], None],
    ) -> None:
        self.new_path = new_path
        self.url = url
        self.max_lines = spec.max_lines
        self.max_bytes = spec.max_bytes
        self.on_full = on_full
        self._part: Part | None = None
        self._fh: Any = None
        self.lines = 0

    def add(self, req: ApiRequest) -> None:
        """Append ``req``'s line, starting a new part where the current one is full."""
        line = batch_line(req, self.url)
        if len(line) > self.max_bytes:
            raise StylisticBiasError(
                f"one batch line is {len(line):,} bytes, over endpoint.batch.max_bytes "
                f"({self.max_bytes:,}); raise max_bytes to the provider's limit"
            )
        part = self._part
        if part is not None and (
            len(part.keys) >= self.max_lines or part.size + len(line) > self.max_bytes
        ):
            self._flush()
        if self._part is None:
            self._part = Part(self.new_path())
            self._part.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self._part.path, "wb")  # noqa: SIM115 - closed by _flush
        assert self._part is not None
        self._fh.write(line)
        self._part.keys.append((req.key, req.kind, req.image_sha256))
        self._part.size += len(line)
        self.lines += 1

    def _flush(self) -> None:
        if self._part is None:
            return
        self._fh.close()
        part, self._part, self._fh = self._part, None, None
        self.on_full(part)

    def close(self) -> None:
        """Hand over the last part (if any)."""
        self._flush()


def write_keys(path: Path, keys: Sequence[tuple[str, str, str | None]]) -> None:
    """The requests of one job (``key kind image_sha256`` per line), atomically."""
    atomic_write_text(path, "".join(f"{k} {kind} {sha or '-'}\n" for k, kind, sha in keys))


def read_keys(path: Path) -> dict[str, tuple[str, str | None]]:
    """:func:`write_keys`' file back: key -> (kind, image_sha256)."""
    out: dict[str, tuple[str, str | None]] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[parts[0]] = (parts[1], None if parts[2] == "-" else parts[2])
    return out


# ------------------------------------------------------------------------------ ledger
class Ledger:
    """The jobs of one stage's output directory (``<out>/batch/ledger.json``).

    Each job is recorded before its file is uploaded, again with the file id once uploaded
    and with the batch id the moment the job exists, so a killed stage finds every job it
    paid for. Each job's requests are in ``job-NNNN.keys`` beside it.
    """

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.path = self.dir / LEDGER
        data: dict[str, Any] = {}
        if self.path.is_file():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except ValueError:
                raise StylisticBiasError(
                    f"{self.path}: not JSON; it records the batch jobs of this stage (delete "
                    "it only after cancelling them: its jobs would be submitted again)"
                ) from None
        self.jobs: list[dict[str, Any]] = list(data.get("jobs") or [])

    def save(self) -> None:
        """Write the ledger atomically."""
        atomic_write_json(self.path, {"version": 1, "jobs": self.jobs})

    def new_job(self, round_: int, part: Part) -> dict[str, Any]:
        """Record a job about to be uploaded (its keys file written first)."""
        n = 1 + max((int(j["job"]) for j in self.jobs), default=0)
        keys = f"job-{n:04d}.keys"
        write_keys(self.dir / keys, part.keys)
        job = {
            "job": n,
            "round": round_,
            "lines": len(part.keys),
            "bytes": part.size,
            "keys": keys,
            "input_file_id": None,
            "batch_id": None,
            "status": "uploading",
            "imported": False,
            "done": 0,
            "failed": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": None,
        }
        self.jobs.append(job)
        self.save()
        return job

    def keys(self, job: Mapping[str, Any]) -> dict[str, tuple[str, str | None]]:
        """The requests of ``job``."""
        return read_keys(self.dir / str(job["keys"]))

    @property
    def last_round(self) -> int:
        """The highest round recorded (0: none)."""
        return max((int(j["round"]) for j in self.jobs), default=0)

    def attempts(self) -> Counter[str]:
        """How many submitted jobs asked each request that a job did not answer (the keys of
        fully answered jobs are in the cache and never asked again)."""
        out: Counter[str] = Counter()
        for job in self.jobs:
            if job.get("batch_id") and (job["status"] != "completed" or job.get("failed")):
                out.update(self.keys(job).keys())
        return out


# ------------------------------------------------------------------------------ HTTP client
class BatchClient:
    """The files and batches endpoints of one provider (blocking; retries like the online
    transport on 408/425/429/5xx and connection errors)."""

    def __init__(
        self,
        endpoint: EndpointSpec,
        transport: TransportSpec,
        *,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.spec = transport
        self.sleep = sleep or SLEEP
        self.base = endpoint.base_url.rstrip("/")
        key = endpoint.api_key()
        self._secret = key
        headers = dict(endpoint.headers)
        if key:
            if endpoint.backend == "azure":
                headers["api-key"] = key
            else:
                headers["Authorization"] = f"Bearer {key}"
        params = {"api-version": endpoint.api_version} if endpoint.api_version else None
        self._http = httpx2.Client(
            headers=headers,
            params=params,
            timeout=httpx2.Timeout(
                max(transport.read_timeout_s, 300.0), connect=transport.connect_timeout_s
            ),
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _scrub(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def _call(self, method: str, path: str, **kw: Any) -> httpx2.Response:
        last = ""
        for attempt in range(self.spec.max_retries + 1):
            for fh in kw.get("files", {}).values():  # a retried upload starts at byte 0
                fh[1].seek(0)
            try:
                resp = self._http.request(method, self.base + path, **kw)
            except httpx2.TransportError as exc:
                last = f"connection error ({type(exc).__name__})"
            else:
                if resp.status_code < 300:
                    return resp
                if resp.status_code not in RETRY_STATUS:
                    raise StylisticBiasError(
                        self._scrub(
                            f"{self.endpoint.source}: {self.endpoint.host} answered HTTP "
                            f"{resp.status_code} to {method} {path}: {resp.text[:300]}"
                        )
                    )
                last = f"HTTP {resp.status_code}"
            if attempt < self.spec.max_retries:
                cap = min(self.spec.backoff_max_s, self.spec.backoff_base_s * 2.0**attempt)
                self.sleep(cap / 2.0 + random.uniform(0.0, cap / 2.0))
        raise StylisticBiasError(
            self._scrub(
                f"{self.endpoint.source}: {method} {self.base + path} failed "
                f"{self.spec.max_retries + 1} time(s) ({last}); the jobs so far are in the "
                "ledger, a rerun resumes"
            )
        )

    def upload(self, path: Path) -> str:
        """Upload a JSONL input file (``purpose: batch``); its file id."""
        with open(path, "rb") as fh:
            resp = self._call(
                "POST",
                "/files",
                data={"purpose": "batch"},
                files={"file": (path.name, fh, "application/jsonl")},
            )
        return str(resp.json()["id"])

    def create(self, file_id: str, url: str, window: str, metadata: Mapping[str, str]) -> str:
        """Submit a job on an uploaded file; its batch id."""
        body = {
            "input_file_id": file_id,
            "endpoint": url,
            "completion_window": window,
            "metadata": dict(metadata),
        }
        return str(self._call("POST", "/batches", json=body).json()["id"])

    def get(self, batch_id: str) -> dict[str, Any]:
        """The job's state (``status``, ``request_counts``, ``output_file_id`` ...)."""
        return dict(self._call("GET", f"/batches/{batch_id}").json())

    def find(self, file_id: str) -> str | None:
        """The id of a job already submitted on ``file_id`` (a stage killed between submitting
        and recording it), or None (also where the provider lists no jobs)."""
        try:
            data = self._call("GET", "/batches", params={"limit": 100}).json()
        except StylisticBiasError:
            return None
        for b in data.get("data") or []:
            if isinstance(b, Mapping) and b.get("input_file_id") == file_id:
                return str(b["id"])
        return None

    def lines(self, file_id: str) -> Iterator[str]:
        """The lines of a file, streamed."""
        last = ""
        for attempt in range(self.spec.max_retries + 1):
            try:
                with self._http.stream("GET", f"{self.base}/files/{file_id}/content") as resp:
                    if resp.status_code >= 300:
                        if resp.status_code not in RETRY_STATUS:
                            resp.read()
                            raise StylisticBiasError(
                                self._scrub(
                                    f"{self.endpoint.source}: {self.endpoint.host} answered "
                                    f"HTTP {resp.status_code} for file {file_id}: "
                                    f"{resp.text[:300]}"
                                )
                            )
                        last = f"HTTP {resp.status_code}"
                    else:
                        yield from resp.iter_lines()
                        return
            except httpx2.TransportError as exc:
                last = f"connection error ({type(exc).__name__})"
            if attempt < self.spec.max_retries:
                self.sleep(min(self.spec.backoff_max_s, self.spec.backoff_base_s * 2.0**attempt))
        raise StylisticBiasError(
            f"{self.endpoint.source}: file {file_id} could not be read ({last}); a rerun resumes"
        )


# ------------------------------------------------------------------------------ the runner
@dataclass
class BatchStats:
    """What the batch jobs of one stage run did (``api_batch_*`` in the run log)."""

    jobs: int = 0  # jobs submitted by this run
    resumed: int = 0  # jobs of an earlier (killed) run polled again
    lines: int = 0  # lines submitted by this run
    done: int = 0  # lines answered through batch output files
    failed: int = 0  # lines failed or expired
    online: int = 0  # lines sent online instead
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    batch_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Numbers for the engine's ``last_stats`` (summed into the run log)."""
        out: dict[str, Any] = {
            "api_batch_jobs": self.jobs,
            "api_batch_jobs_resumed": self.resumed,
            "api_batch_lines": self.lines,
            "api_batch_lines_done": self.done,
            "api_batch_lines_failed": self.failed,
            "api_batch_lines_online": self.online,
            "api_batch_prompt_tokens": self.prompt_tokens,
            "api_batch_completion_tokens": self.completion_tokens,
        }
        if self.cost_usd is not None:
            out["api_batch_cost_usd"] = self.cost_usd
        return out


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return f"{s // 3600}h{(s % 3600) // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class BatchRunner:
    """Fills the response cache through batch jobs (see the module docstring).

    ``online(requests)`` sends requests through the online transport (their results cached);
    ``clock`` and ``sleep`` are what polling reads and waits with (a test passes its own).
    """

    def __init__(
        self,
        endpoint: EndpointSpec,
        transport: TransportSpec,
        cache: ResponseCache,
        directory: Path,
        *,
        online: Callable[[list[ApiRequest]], None],
        client: BatchClient | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        label: str = "",
    ) -> None:
        self.endpoint = endpoint
        self.spec = endpoint.batch
        self.cache = cache
        self.dir = Path(directory)
        self.online = online
        self.clock = clock or CLOCK
        self.sleep = sleep or SLEEP
        self.client = client or BatchClient(endpoint, transport, sleep=self.sleep)
        self.label = label or endpoint.served_model
        self.ledger = Ledger(self.dir)
        self.url = line_url(endpoint)
        self.stats = BatchStats()
        self._round = 0

    # ---- submitting --------------------------------------------------------------------------
    def _part_path(self) -> Path:
        n = 1 + max((int(j["job"]) for j in self.ledger.jobs), default=0)
        return self.dir / f"job-{n:04d}.jsonl"

    def _submit(self, part: Part) -> None:
        job = self.ledger.new_job(self._round, part)
        job["input_file_id"] = self.client.upload(part.path)
        job["status"] = "uploaded"
        self.ledger.save()
        self._create(job)
        part.path.unlink(missing_ok=True)
        self.stats.jobs += 1
        self.stats.lines += int(job["lines"])

    def _create(self, job: dict[str, Any]) -> None:
        meta = {"stylisticbias_job": str(job["job"]), "round": str(job["round"])}
        job["batch_id"] = self.client.create(
            str(job["input_file_id"]), self.url, self.spec.completion_window, meta
        )
        job["status"] = "validating"
        self.ledger.save()
        self.stats.batch_ids.append(str(job["batch_id"]))
        log.info(
            "%s: batch job %s submitted (round %d, %d line(s), %.1f MB)",
            self.label,
            job["batch_id"],
            job["round"],
            job["lines"],
            job["bytes"] / 1e6,
        )

    def _recover(self) -> list[dict[str, Any]]:
        """Jobs of an earlier run: a job whose file was uploaded but whose id was not recorded
        is found again (or submitted now); one whose upload never finished is dropped. The
        jobs not yet imported are returned."""
        keep = []
        for job in self.ledger.jobs:
            if job.get("batch_id") is None and job.get("input_file_id"):
                found = self.client.find(str(job["input_file_id"]))
                if found:
                    job["batch_id"], job["status"] = found, "validating"
                    self.ledger.save()
                else:
                    self._create(job)
            if job.get("batch_id") is None:  # never uploaded: never paid for
                (self.dir / str(job["keys"])).unlink(missing_ok=True)
                (self.dir / f"job-{int(job['job']):04d}.jsonl").unlink(missing_ok=True)
                continue
            keep.append(job)
        if len(keep) != len(self.ledger.jobs):
            self.ledger.jobs = keep
            self.ledger.save()
        pending = [j for j in keep if not j.get("imported")]
        if pending:
            self.stats.resumed += len(pending)
            log.info(
                "%s: resuming %d batch job(s) of an earlier run: %s",
                self.label,
                len(pending),
                ", ".join(str(j["batch_id"]) for j in pending),
            )
        return pending

    # ---- polling -----------------------------------------------------------------------------
    def _import(self, job: dict[str, Any], info: Mapping[str, Any]) -> None:
        keys = self.ledger.keys(job)
        res = ImportResult()
        for fid in (info.get("output_file_id"), info.get("error_file_id")):
            if fid:
                src = f"batch {job['batch_id']} file {fid}"
                lines = self.client.lines(str(fid))
                res.add(import_lines(lines, self.cache, self.endpoint, keys, source=src))
        unanswered = len(keys) - res.done
        job.update(
            status=str(info.get("status")),
            imported=True,
            done=res.done,
            failed=unanswered,
            prompt_tokens=res.prompt_tokens,
            completion_tokens=res.completion_tokens,
            cost_usd=self.endpoint.prices.batch_cost(res.prompt_tokens, res.completion_tokens),
        )
        self.ledger.save()
        self.stats.done += res.done
        self.stats.failed += unanswered
        self.stats.prompt_tokens += res.prompt_tokens
        self.stats.completion_tokens += res.completion_tokens
        if job["cost_usd"] is not None:
            self.stats.cost_usd = (self.stats.cost_usd or 0.0) + float(job["cost_usd"])
        level = logging.WARNING if unanswered else logging.INFO
        log.log(
            level,
            "%s: batch job %s %s: %d line(s) answered, %d failed or expired",
            self.label,
            job["batch_id"],
            job["status"],
            res.done,
            unanswered,
        )

    def wait(self, jobs: Sequence[dict[str, Any]]) -> None:
        """Poll ``jobs`` until each is finished and imported, logging progress."""
        pending = [j for j in jobs if not j.get("imported")]
        total_lines = sum(int(j["lines"]) for j in pending)
        t0 = self.clock()
        last_msg = ""
        done_lines: dict[Any, int] = {}
        while pending:
            still = []
            for job in pending:
                info = self.client.get(str(job["batch_id"]))
                status = str(info.get("status"))
                counts = info.get("request_counts") or {}
                done_lines[job["batch_id"]] = int(counts.get("completed") or 0) + int(
                    counts.get("failed") or 0
                )
                if status != job["status"]:
                    job["status"] = status
                    self.ledger.save()
                if status in TERMINAL:
                    self._import(job, info)
                    done_lines[job["batch_id"]] = int(job["lines"])
                else:
                    still.append(job)
            pending = still
            lines = sum(done_lines.values())
            elapsed = self.clock() - t0
            eta = (total_lines - lines) * elapsed / lines if lines and elapsed > 0 else None
            n_jobs = len(jobs)
            msg = (
                f"{self.label}: batch {n_jobs - len(pending)}/{n_jobs} job(s) done, "
                f"{lines:,}/{total_lines:,} lines"
            )
            if msg != last_msg:
                log.info("%s, ETA %s", msg, _eta(eta) if pending else "0m00s")
                last_msg = msg
            if pending:
                self.sleep(self.spec.poll_interval_s)

    # ---- the whole run -----------------------------------------------------------------------
    def run(self, discover: Callable[[], Iterable[ApiRequest]]) -> BatchStats:
        """Ask every request ``discover()`` yields (those not in the cache yet) through batch
        jobs, round after round until it yields none; returns what was done."""
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self.wait(self._recover())
            self._round = self.ledger.last_round
            while True:
                self._round += 1
                attempts = self.ledger.attempts()
                writer = PartWriter(self._part_path, self.url, self.spec, self._submit)
                online: dict[str, ApiRequest] = {}
                seen: set[str] = set()
                jobs_before = len(self.ledger.jobs)
                for req in discover():
                    if req.key in seen:
                        continue
                    seen.add(req.key)
                    n = attempts.get(req.key, 0)
                    if n == 0 or (self.spec.retry == "batch" and n <= self.spec.max_resubmits):
                        writer.add(req)
                    else:
                        online[req.key] = req
                writer.close()
                new_jobs = self.ledger.jobs[jobs_before:]
                if online:
                    log.info(
                        "%s: %d failed or expired line(s) sent online (endpoint.batch.retry: %s)",
                        self.label,
                        len(online),
                        self.spec.retry,
                    )
                    self.online(list(online.values()))
                    self.stats.online += len(online)
                if not new_jobs and not online:
                    break
                self.wait(new_jobs)
        finally:
            self.client.close()
        return self.stats
