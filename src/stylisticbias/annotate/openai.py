"""An annotator behind any OpenAI-compatible chat-completions endpoint.

Each (image, question) is one request: the image(s) as data URLs (the base face first for a
two-image question), then the question and the JSON form its reply must take; temperature and
seed from the annotator file, ``response_format: json_object`` when ``json_mode``. Requests go
through the openai engine's transport (bounded concurrency, retries, rate limits, refusals kept
as results) and its response cache, keyed by the body with each image replaced by its sha256:
a rerun asks nothing again. Replies are validated by :func:`~.questions.validate_reply`.
Probabilities are not requested (``probs`` stays null).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stylisticbias.annotate.base import Annotator, record
from stylisticbias.annotate.items import AnnotationItem
from stylisticbias.annotate.questions import Question
from stylisticbias.config import load_group_option, project_root
from stylisticbias.judge.engines.openai.cache import ResponseCache, request_key
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

    def request(self, q: Question, images: Sequence[EncodedImage]) -> ApiRequest:
        """The request of one question about ``images`` (and its cache key)."""
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
            "annotate",
            est,
        )

    async def _run(self, items: Sequence[AnnotationItem]) -> list[dict[str, Any]]:
        encoded: dict[str, EncodedImage] = {}

        def enc(path: str) -> EncodedImage:
            if path not in encoded:
                encoded[path] = encode_image(path)
            return encoded[path]

        jobs: list[tuple[AnnotationItem, Question, ApiRequest]] = []
        for item in items:
            for q in item.questions:
                paths = [item.path] if q.images == 1 else [str(item.base_path), item.path]
                jobs.append((item, q, self.request(q, [enc(p) for p in paths])))
        async with Transport(self.endpoint, self.transport, self.cache, self.stats) as t:
            results = await gather_or_cancel(*(t.fetch(r) for _, _, r in jobs))
        return [
            record(self.name, self.engine, item, q, res.get("content"), res.get("refusal"))
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
