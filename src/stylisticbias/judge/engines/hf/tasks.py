"""Exact answer distributions of task prompts (``choice_k``, ``pairwise``, ``text_only``...)
with the engine's model: the same shared-prefix expansion as the forced choice.

A task's exact decoder expands the response tree over the task's labels
(:meth:`TaskType.rules <stylisticbias.judge.protocol.tasks.base.TaskType.rules>`: k option
labels for ``choice_k``): the prompts of one image share their token prefix (chat preamble,
image, the start of the question), which runs once; each prompt's suffix and every branch of
its answers run on top of it, and a branch is decided by
:func:`~stylisticbias.judge.protocol.parsing.decide_prefix` over those labels. The result is
the mass of every label (all k), ``invalid`` and ``undecided``, exact up to the pruning rule.

An ask's system message (:attr:`TaskAsk.system <stylisticbias.judge.protocol.tasks.asks.TaskAsk>`)
is rendered as the chat template's system turn when the template has one
(:func:`~stylisticbias.judge.protocol.prompts.system_turn`, probed once per engine), else
prepended to the user text, with one logged note (:func:`system_parts`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from stylisticbias.benchmark import ParserRules
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.hf.exact import ExpandStats, expand_all, prefill
from stylisticbias.judge.engines.hf.prompts import split_prompts
from stylisticbias.judge.protocol.distribution import Distribution
from stylisticbias.judge.protocol.prompts import (
    prepend_system,
    render,
    system_turn,
    tokenize_text,
)
from stylisticbias.judge.protocol.tasks.asks import TaskAsk, TaskReply

log = logging.getLogger(__name__)


def system_parts(engine: Any, text: str, system: str) -> tuple[str, str]:
    """``(text, system)`` as the engine's model is asked: unchanged where its chat template has
    a system turn, else the system message prepended to the text (and no system turn), noted
    once in the log. Whether the template has one is probed once per engine."""
    if not system:
        return text, ""
    ok = getattr(engine, "_system_turn", None)
    if ok is None:
        ok = system_turn(engine.processor, engine.chat_template_kwargs)
        engine._system_turn = ok
        if not ok:
            log.info(
                "%s: the chat template has no system role; a task's system message is "
                "prepended to the user text",
                getattr(engine, "model_name", type(engine).__name__),
            )
    return (text, system) if ok else (prepend_system(text, system), "")


def label_distributions(
    engine: Any,
    image: Any,
    texts: Sequence[str],
    rules: ParserRules,
    stats: ExpandStats | None = None,
    system: str = "",
) -> list[Distribution]:
    """Exact distributions over ``rules.letters`` (+ invalid, undecided) of the prompts
    ``texts`` asked about ``image`` by an :class:`~.engine.HFJudgeEngine` (set up).

    ``image``: one PIL image, or a list of them for a prompt with several images (a pairwise
    prompt's two, in slot order: all go into the shared prefix, before the text).

    The engine's decoding settings (temperature, token limit, pruning) are used with the
    task's labels in place of the protocol's two letters. ``system``: the prompts' system
    message (:func:`system_parts`).
    """
    if engine.model is None:
        raise StylisticBiasError("label_distributions: call engine.setup() first")
    if not texts:
        return []
    decoding = dataclasses.replace(engine.decoding_params, parser=rules)
    kw = engine.chat_template_kwargs
    n_images = len(image) if isinstance(image, list | tuple) else 1
    parts = [system_parts(engine, t, system) for t in texts]
    texts = [t for t, _ in parts]
    system = parts[0][1]
    rendered = [render(engine.processor, t, kw, images=n_images, system=system) for t in texts]
    tokens = [tokenize_text(engine.processor, r) for r in rendered]
    # one prompt alone splits before its last token (split_prompts keeps >= 1 suffix token)
    prompts = split_prompts(
        engine.model,
        engine.processor,
        image,
        list(texts),
        rendered,
        kw,
        text_tokens=tokens,
        system=system,
    )
    prompts.prefix_inputs = {
        k: v.to(engine.model.device) if hasattr(v, "to") else v
        for k, v in prompts.prefix_inputs.items()
    }
    cache = prefill(engine.model, prompts.prefix_inputs)
    dists = expand_all(
        engine.model,
        engine.processor.tokenizer,
        cache,
        prompts,
        decoding,
        engine.suffix_batch_size,
        stats=stats or ExpandStats(),
        padding=engine.suffix_padding,
    )
    return dists


def answer_tasks(engine: Any, asks: Sequence[TaskAsk]) -> list[TaskReply]:
    """Every ask answered by an :class:`~.engine.HFJudgeEngine` (set up).

    Under ``exact`` and ``sampled`` decoding an ask with labels gets its exact distribution;
    the asks that show the same images with the same labels and system message share one
    prefix (:func:`label_distributions`). An ask without labels (a free number), and every ask
    under ``generate``, gets one ``generate`` call seeded like the forced choice's
    (:meth:`~.engine.HFJudgeEngine.torch_seed`). Each image file is decoded once per call.
    """
    from PIL import Image

    pixels: dict[str, Any] = {}

    def images(paths: Sequence[str]) -> list[Any]:
        for p in paths:
            if p not in pixels:
                with Image.open(p) as im:
                    pixels[p] = im.convert("RGB")
        return [pixels[p] for p in paths]

    exact = engine.decoding in ("exact", "sampled")
    out: list[TaskReply | None] = [None] * len(asks)
    groups: dict[tuple[tuple[str, ...], ParserRules, str], list[int]] = {}
    for i, ask in enumerate(asks):
        if exact and ask.rules is not None:
            groups.setdefault((ask.images, ask.rules, ask.system), []).append(i)
            continue
        text, system = system_parts(engine, ask.text, ask.system)
        enc = engine.encode_prompt(text, images(ask.images), system)
        text = engine.generate_one(enc, engine.torch_seed(ask.seed, ask.key, 0, 0))
        out[i] = TaskReply(text=text)
    for (paths, rules, system), idx in groups.items():
        dists = label_distributions(
            engine, images(paths), [asks[i].text for i in idx], rules, system=system
        )
        for i, d in zip(idx, dists):
            mass, und = d.normalised()
            best = {label: text for label, (_, text) in d.best.items()}
            out[i] = TaskReply(mass=mass, undecided=und, best=best)
    return [r for r in out if r is not None]
