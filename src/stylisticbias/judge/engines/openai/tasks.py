"""Exact answer distributions of task prompts (``choice_k`` ...) from a server's top
log-probabilities: the forced-choice expansion (:func:`~.exact.expand_texts`) over the task's
labels instead of the protocol's two letters. The mass the top-k does not show stays
*undecided* (the tail bound of :func:`~.exact.temper`), so no label's mass is overstated.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from stylisticbias.benchmark import ParserRules
from stylisticbias.judge.engines.openai.batch import Collector
from stylisticbias.judge.engines.openai.exact import TextDistribution, expand_texts, split_batch
from stylisticbias.judge.engines.openai.requests import EncodedImage, encode_image
from stylisticbias.judge.engines.openai.transport import Transport, gather_or_cancel
from stylisticbias.judge.protocol.tasks.asks import TaskAsk, TaskReply


async def label_distributions(
    engine: Any,
    tr: Transport | Collector,
    img: EncodedImage | Sequence[EncodedImage],
    texts: Sequence[str],
    rules: ParserRules,
    gather: Callable[..., Awaitable[Any]] = gather_or_cancel,
    system: str = "",
) -> list[TextDistribution]:
    """Exact distributions over ``rules.letters`` (+ invalid, undecided) of the prompts
    ``texts`` about one image (or several in one prompt, a list: one ``image_url`` part
    each), asked through an :class:`~.engine.OpenAIJudgeEngine`'s request builder and
    transport ``tr``; each round's requests go out together through ``gather``. ``system``:
    the prompts' system message (a ``system`` message; none when empty)."""
    settings = dataclasses.replace(engine.exact, parser=rules)
    imgs = list(img) if isinstance(img, list | tuple) else [img]

    async def fetch(k: int, prefix: str) -> dict[str, Any]:
        req = engine.builder.logprobs_images(
            imgs,
            texts[k],
            prefix,
            settings.top_logprobs,
            paths=settings.request_paths,
            temperature=settings.explore_temperature,
            system=system,
        )
        return await tr.fetch(req)

    async def fetch_batch(k: int, prefixes: Sequence[str]) -> list[dict[str, Any]]:
        req = engine.builder.logprobs_batch(
            imgs,
            texts[k],
            prefixes,
            settings.top_logprobs,
            temperature=settings.explore_temperature,
            system=system,
        )
        return split_batch(await tr.fetch(req), len(prefixes))

    batch = fetch_batch if engine.endpoint.capabilities.batch_chat else None
    return await expand_texts(len(texts), fetch, settings, gather, batch)


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


async def answer_tasks_async(
    engine: Any,
    tr: Transport | Collector,
    asks: Sequence[TaskAsk],
    gather: Callable[..., Awaitable[Any]] = gather_or_cancel,
) -> list[TaskReply]:
    """Every ask answered through an :class:`~.engine.OpenAIJudgeEngine`'s transport ``tr``.

    Where the engine computes exact distributions (``exact``/``sampled`` on a server with
    log-probabilities and prefill) an ask with labels gets its distribution from the top
    log-probabilities (:func:`label_distributions`; asks showing the same images with the same
    labels and system message go together); an ask without labels (a free number), and every
    ask otherwise, gets one seeded ``generate`` request. A refused request is a refusal reply,
    never re-asked. Each image file is read and encoded once per call.

    ``tr`` is a :class:`~.transport.Transport`, or a :class:`~.batch.Collector` with ``gather``
    :func:`~.batch.gather_all` (batch jobs: every ask's next requests are recorded, nothing
    sent); every ask starts at once, through ``gather``.
    """
    encoded: dict[str, EncodedImage] = {}

    def images(paths: Sequence[str]) -> list[EncodedImage]:
        for p in paths:
            if p not in encoded:
                encoded[p] = encode_image(p)
        return [encoded[p] for p in paths]

    groups: dict[tuple[tuple[str, ...], ParserRules, str], list[int]] = {}
    singles: list[int] = []
    for i, ask in enumerate(asks):
        if engine.use_exact and ask.rules is not None:
            groups.setdefault((ask.images, ask.rules, ask.system), []).append(i)
        else:
            singles.append(i)

    async def generated(i: int) -> TaskReply:
        ask = asks[i]
        req = engine.builder.generate_images(images(ask.images), ask.text, ask.seed, ask.system)
        res = await tr.fetch(req)
        if res.get("refusal"):
            return TaskReply(refusal=str(res["refusal"]))
        return TaskReply(text=res.get("content") or "")

    async def exact(
        paths: tuple[str, ...], rules: ParserRules, system: str, idx: list[int]
    ) -> list[TaskReply]:
        dists = await label_distributions(
            engine, tr, images(paths), [asks[i].text for i in idx], rules, gather, system
        )
        out = []
        for d in dists:
            mass, und = d.normalised()
            out.append(
                TaskReply(mass=mass, undecided=und, best={k: t for k, (_, t) in d.best.items()})
            )
        return out

    got = await gather(
        *(generated(i) for i in singles),
        *(exact(p, r, sy, idx) for (p, r, sy), idx in groups.items()),
    )
    gen, ex = got[: len(singles)], got[len(singles) :]
    replies: dict[int, TaskReply] = dict(zip(singles, gen))
    for idx, got in zip(groups.values(), ex):
        replies.update(zip(idx, got))
    return [replies[i] for i in range(len(asks))]


def answer_tasks(engine: Any, asks: Sequence[TaskAsk]) -> list[TaskReply]:
    """:func:`answer_tasks_async` with the engine's own transport (a blocking call)."""

    async def go() -> list[TaskReply]:
        async with Transport(engine.endpoint, engine.transport, engine.cache, engine.stats) as tr:
            return await answer_tasks_async(engine, tr, asks)

    return asyncio.run(go())
