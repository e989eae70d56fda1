"""Dry-run estimate: requests, tokens and cost of a judge run before anything is sent.

``generate`` (and ``sampled`` without log-probabilities) asks exactly one request per
(image, scenario, ordering, seed), so its count is exact and the cache is checked request by
request (hits cost nothing). ``exact`` asks one request per node of each prompt's answer tree,
which is known only once the server answers; the estimate uses ``exact_requests_per_prompt``
(engine config, default 6: ``""``, ``(``, ``(a``, ``(b``, ``(a)``, ``(b)`` for a model that
answers ``(a)``/``(b)``) and checks the cache for the first request of every prompt.

Prompt tokens per request: the endpoint's ``image_tokens`` + text characters / 4 (a rough
rule; the run log reports the server's real counts). Completion tokens: ``max_new_tokens`` per
``generate`` request (an upper bound), 1 per log-probability request.

The same requests are priced online and through batch jobs side by side: the batch price
comes from the model file's ``prices`` (``batch_discount``, or ``batch_input_per_million`` /
``batch_output_per_million``); without one it is unknown (None), never assumed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.judge.engines.openai.cache import ResponseCache
from stylisticbias.judge.engines.openai.exact import ExactSettings
from stylisticbias.judge.engines.openai.requests import (
    CHARS_PER_TOKEN,
    EncodedImage,
    RequestBuilder,
)
from stylisticbias.judge.engines.openai.spec import EndpointSpec
from stylisticbias.judge.protocol.prompts import PromptSpec
from stylisticbias.spec.engines import OpenAIEngineSpec

log = logging.getLogger(__name__)


class Estimable(Protocol):
    """What an estimate reads from the engine (the engine satisfies it; this module never
    imports the engine, so the engine can import this one)."""

    model_name: str
    decoding: str
    use_exact: bool
    seeds: list[int]
    specs: list[PromptSpec]
    endpoint: EndpointSpec
    exact: ExactSettings
    builder: RequestBuilder
    spec: OpenAIEngineSpec

    @property
    def cache_path(self) -> Path:
        """Where the response cache file lies (it may not exist yet)."""


@dataclass(frozen=True)
class Estimate:
    """What a run would send (cache hits excluded) and cost."""

    model: str
    endpoint_host: str
    served_model: str
    decoding: str
    images: int
    requests_total: int
    cached: int
    requests_to_send: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    exact_estimated: bool  # True when the request count of exact is an estimate
    #: the same requests through batch jobs (None: the model file has no batch price)
    batch_cost_usd: float | None = None
    #: the run sends them through batch jobs (``endpoint.batch.enabled``)
    batch: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        return asdict(self)

    def summary(self) -> str:
        """One paragraph for the log."""
        approx = "~" if self.exact_estimated else ""
        return (
            f"dry run {self.model} ({self.served_model} @ {self.endpoint_host}, "
            f"{self.decoding}): {self.images} image(s), {approx}{self.requests_total:,} "
            f"request(s), {self.cached:,} cached, {approx}{self.requests_to_send:,} to send; "
            f"est. {self.prompt_tokens:,} prompt + {self.completion_tokens:,} completion tokens, "
            f"est. cost ${self.cost_usd:,.2f} online, "
            + (
                f"${self.batch_cost_usd:,.2f} through batch jobs"
                if self.batch_cost_usd is not None
                else "batch price not set (prices.batch_discount in the model file)"
            )
            + (" (this run: batch jobs)" if self.batch else "")
        )


def _sha_only(path: str) -> EncodedImage:
    """The image's sha256 (enough for cache keys) without building its data URL."""
    return EncodedImage(hashlib.sha256(Path(path).read_bytes()).hexdigest(), "")


def estimate(engine: Estimable, items: Sequence[ImageItem]) -> Estimate:
    """The :class:`Estimate` of judging ``items`` with ``engine``; logs its summary."""
    b = engine.builder
    # read-only: a dry run creates no cache directory and no SQLite file
    cache = ResponseCache(engine.cache_path, read_only=True)
    per_prompt = float(engine.spec.exact_requests_per_prompt)
    total = cached = 0
    prompt_tok = compl_tok = 0.0
    for it in items:
        img = _sha_only(it.path)
        for spec in engine.specs:
            if engine.use_exact:
                ex = engine.exact
                paths = ex.request_paths
                req = b.logprobs(
                    img,
                    spec.text,
                    "",
                    ex.top_logprobs,
                    paths=paths,
                    temperature=ex.explore_temperature,
                )
                hit = cache.contains(req.key)
                n = per_prompt
                total_here, cached_here = n, (1 if hit else 0)
                compl = float(ex.path_tokens * max(1, paths))
            else:
                reqs = [b.generate(img, spec.text, s) for s in engine.seeds]
                total_here = len(reqs)
                cached_here = sum(cache.contains(r.key) for r in reqs)
                compl = float(b.max_new_tokens)
            total += total_here
            cached += cached_here
            send = max(0.0, total_here - cached_here)
            prompt_tok += send * (req_prompt_tokens(engine, spec.text))
            compl_tok += send * compl
    cache.close()
    est = Estimate(
        model=engine.model_name,
        endpoint_host=engine.endpoint.host,
        served_model=engine.endpoint.served_model,
        decoding=engine.decoding,
        images=len(items),
        requests_total=round(total),
        cached=int(cached),
        requests_to_send=round(total - cached),
        prompt_tokens=round(prompt_tok),
        completion_tokens=round(compl_tok),
        cost_usd=engine.endpoint.prices.cost(prompt_tok, compl_tok),
        exact_estimated=engine.use_exact,
        batch_cost_usd=engine.endpoint.prices.batch_cost(prompt_tok, compl_tok),
        batch=engine.endpoint.batch.enabled,
    )
    log.info("%s", est.summary())
    return est


def req_prompt_tokens(engine: Estimable, text: str) -> float:
    """Estimated prompt tokens of one request of prompt ``text``."""
    return engine.endpoint.image_tokens + len(text) / CHARS_PER_TOKEN + 10
