"""An annotator behind any OpenAI-compatible chat-completions endpoint.

Each (image, question) is one request: the image(s) as data URLs (the base face first for a
two-image question), then the question and the JSON form its reply must take; temperature and
seed from the annotator file, ``response_format: json_object`` when ``json_mode``. Requests go
through the openai engine's transport (bounded concurrency, retries, rate limits, refusals kept
as results) and its response cache, keyed by the body with each image replaced by its sha256:
a rerun asks nothing again. Replies are validated by :func:`~.questions.validate_reply`.

With ``exact: true`` (an endpoint with ``capabilities.logprobs``), categorical and yes/no
questions are not sampled: their exact answer distribution comes from the server's top
log-probabilities (:mod:`~.exact`; the openai judge engine's expansion
:func:`~stylisticbias.judge.engines.openai.exact.expand_texts`): each request continues the
assistant prefill ``{"answer": "`` plus the partial answer by one token, every finished branch
is read by the validator, and the mass the top-k does not show stays undecided (the unseen-mass
bound of ``temper``). ``probs`` holds it; the reply is the most probable answer's branch.
Otherwise ``probs`` stays null.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stylisticbias.annotate.base import Annotator, record
from stylisticbias.annotate.exact import PREFILL, answer_decider, exact_fields, exact_question
from stylisticbias.annotate.items import AnnotationItem
from stylisticbias.annotate.questions import Question
from stylisticbias.config import load_group_option, project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.openai.cache import ResponseCache, request_key
from stylisticbias.judge.engines.openai.exact import ExactSettings, TextDistribution, expand_texts
from stylisticbias.judge.engines.openai.requests import CHARS_PER_TOKEN, EncodedImage, encode_image
from stylisticbias.judge.engines.openai.spec import endpoint_spec, transport_spec
from stylisticbias.judge.engines.openai.transport import (
    ApiRequest,
    Transport,
    TransportStats,
    gather_or_cancel,
)
from stylisticbias.spec.annotate import OpenAIAnnotatorSpec


class OpenAIAnnotator(Annotator):
    """Asks an OpenAI-compatible endpoint; one cached request per (image, question)."""

    engine = "openai"

    def __init__(self, spec: OpenAIAnnotatorSpec) -> None:
        super().__init__(spec)
        self.spec: OpenAIAnnotatorSpec = spec
        cfg = {"name": spec.name, "endpoint": dict(spec.endpoint), "prices": dict(spec.prices)}
        self.endpoint = endpoint_spec(cfg)
        defaults = dict(load_group_option("engine", "openai").get("transport") or {})
        self.transport = transport_spec(
            {"transport": {**defaults, **dict(spec.transport)}}, self.endpoint
        )
        cache = Path(spec.cache)
        self.cache = ResponseCache(cache if cache.is_absolute() else project_root() / cache)
        self.stats = TransportStats()
        if spec.exact and not self.endpoint.capabilities.logprobs:
            raise StylisticBiasError(
                f"annotators.{spec.name}.exact: true needs an endpoint with log-probabilities "
                "(endpoint.capabilities.logprobs: true); set exact: false to sample replies"
            )

    def exact_settings(self, q: Question) -> ExactSettings:
        """The expansion's settings for question ``q`` (its answers and validator)."""
        e, caps = self.spec.exact_settings, self.endpoint.capabilities
        return ExactSettings(
            temperature=float(e.temperature),
            max_new_tokens=int(e.max_new_tokens),
            prune_threshold=float(e.prune_threshold),
            max_branches_per_suffix=int(e.max_branches_per_suffix),
            top_logprobs=min(int(e.top_logprobs), int(caps.max_top_logprobs)),
            logprobs_mode=caps.logprobs_mode,
            eos_tokens=tuple(caps.eos_tokens),
            vocab_size=int(caps.vocab_size),
            decide=answer_decider(q),
            labels=q.choices,
        )

    def request(
        self, q: Question, images: Sequence[EncodedImage], partial: str | None = None
    ) -> ApiRequest:
        """The request of one question about ``images`` (and its cache key); with ``partial``,
        the next-token log-probabilities after the reply ``PREFILL + partial`` (exact)."""
        caps = self.endpoint.capabilities

        def body_with(urls: Sequence[str]) -> dict[str, Any]:
            content: list[dict[str, Any]] = [
                {"type": "image_url", "image_url": {"url": u}} for u in urls
            ]
            content.append({"type": "text", "text": q.prompt()})
            body: dict[str, Any] = {
                "model": self.endpoint.served_model,
                "messages": [{"role": "user", "content": content}],
                "temperature": float(self.spec.temperature),
                caps.max_tokens_field: int(self.spec.max_tokens),
            }
            if caps.seed:
                body["seed"] = int(self.spec.seed)
            if self.spec.json_mode:
                body["response_format"] = {"type": "json_object"}
            body.update(copy.deepcopy(dict(self.endpoint.extra_body)))
            if partial is not None:
                e = self.spec.exact_settings
                body["messages"].append({"role": "assistant", "content": PREFILL + partial})
                body.update(
                    continue_final_message=True,
                    add_generation_prompt=False,
                    logprobs=True,
                    temperature=float(e.temperature),
                )
                body[caps.max_tokens_field] = 1
                body["top_logprobs"] = min(int(e.top_logprobs), int(caps.max_top_logprobs))
                body.pop("response_format", None)
            return body

        keyed = body_with([f"sha256:{im.sha256}" for im in images])
        est = (
            self.endpoint.image_tokens * len(images)
            + int(len(q.prompt()) / CHARS_PER_TOKEN)
            + int(self.spec.max_tokens)
        )
        return ApiRequest(
            request_key(self.endpoint.url, keyed),
            body_with([im.data_url for im in images]),
            images[-1].sha256,
            "annotate" if partial is None else "logprobs",
            est,
        )

    async def distribution(
        self, t: Transport, q: Question, images: Sequence[EncodedImage]
    ) -> TextDistribution:
        """The exact answer distribution of ``q`` about ``images`` (module docstring)."""

        async def fetch(_: int, partial: str) -> dict[str, Any]:
            return await t.fetch(self.request(q, images, partial))

        return (await expand_texts(1, fetch, self.exact_settings(q), asyncio.gather))[0]

    async def _run(self, items: Sequence[AnnotationItem]) -> list[dict[str, Any]]:
        encoded: dict[str, EncodedImage] = {}

        def enc(path: str) -> EncodedImage:
            if path not in encoded:
                encoded[path] = encode_image(path)
            return encoded[path]

        jobs: list[tuple[AnnotationItem, Question, list[EncodedImage]]] = []
        for item in items:
            for q in item.questions:
                paths = [item.path] if q.images == 1 else [str(item.base_path), item.path]
                jobs.append((item, q, [enc(p) for p in paths]))

        async def one(t: Transport, q: Question, imgs: list[EncodedImage]) -> dict[str, Any]:
            if self.spec.exact and exact_question(q):
                d = await self.distribution(t, q, imgs)
                f = exact_fields(d)
                refused = d.best.get("invalid", (0.0, ""))[1].startswith("[refused")
                if d.refusals and refused and f["content"] == PREFILL + d.best["invalid"][1]:
                    # the modal reply is a refusal (the server's, kept as its reason)
                    return {"refusal": d.refusals[0], "probs": f["probs"]}
                return f
            return await t.fetch(self.request(q, imgs))

        async with Transport(self.endpoint, self.transport, self.cache, self.stats) as t:
            results = await gather_or_cancel(*(one(t, q, imgs) for _, q, imgs in jobs))
        return [
            record(
                self.name,
                self.engine,
                item,
                q,
                res.get("content"),
                res.get("refusal"),
                probs=res.get("probs"),
            )
            for (item, q, _), res in zip(jobs, results)
        ]

    def annotate(self, items: Sequence[AnnotationItem]) -> list[dict[str, Any]]:
        """One record per (item, question); requests of the batch run concurrently."""
        return asyncio.run(self._run(items))

    def fingerprint(self) -> dict[str, Any]:
        """The spec without the transport and cache settings (they do not change answers)."""
        fp = super().fingerprint()
        for key in ("transport", "cache"):
            fp.pop(key, None)
        return fp

    def close(self) -> None:
        """Close the response cache."""
        self.cache.close()
