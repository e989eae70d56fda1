"""Exact answer distributions of task prompts (``choice_k`` ...) from a server's top
log-probabilities: the forced-choice expansion (:func:`~.exact.expand_texts`) over the task's
labels instead of the protocol's two letters. The mass the top-k does not show stays
*undecided* (the tail bound of :func:`~.exact.temper`), so no label's mass is overstated.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

from stylisticbias.benchmark import ParserRules
from stylisticbias.judge.engines.openai.exact import TextDistribution, expand_texts, split_batch
from stylisticbias.judge.engines.openai.requests import EncodedImage
from stylisticbias.judge.engines.openai.transport import Transport


async def label_distributions(
    engine: Any,
    tr: Transport,
    img: EncodedImage | Sequence[EncodedImage],
    texts: Sequence[str],
    rules: ParserRules,
) -> list[TextDistribution]:
    """Exact distributions over ``rules.letters`` (+ invalid, undecided) of the prompts
    ``texts`` about one image (or several in one prompt, a list: one ``image_url`` part
    each), asked through an :class:`~.engine.OpenAIJudgeEngine`'s request builder and
    transport ``tr``."""
    settings = dataclasses.replace(engine.exact, parser=rules)
    imgs = list(img) if isinstance(img, list | tuple) else [img]

    async def fetch(k: int, prefix: str) -> dict[str, Any]:
        req = engine.builder.logprobs_images(
            imgs, texts[k], prefix, settings.top_logprobs,
            paths=settings.paths_per_request if settings.path_tokens > 1 else 0,
            temperature=settings.explore_temperature,
        )  # fmt: skip
        return await tr.fetch(req)

    async def fetch_batch(k: int, prefixes: Sequence[str]) -> list[dict[str, Any]]:
        req = engine.builder.logprobs_batch(imgs, texts[k], prefixes, settings.top_logprobs,
                                            temperature=settings.explore_temperature)  # fmt: skip
        return split_batch(await tr.fetch(req), len(prefixes))

    batch = fetch_batch if engine.endpoint.capabilities.batch_chat else None
    return await expand_texts(len(texts), fetch, settings, asyncio.gather, batch)


def run_label_distributions(
    engine: Any,
    img: EncodedImage | Sequence[EncodedImage],
    texts: Sequence[str],
    rules: ParserRules,
) -> list[TextDistribution]:
    """:func:`label_distributions` with the engine's own transport (a blocking call)."""

    async def go() -> list[TextDistribution]:
        async with Transport(engine.endpoint, engine.transport, engine.cache, engine.stats) as tr:
            return await label_distributions(engine, tr, img, texts, rules)

    return asyncio.run(go())
