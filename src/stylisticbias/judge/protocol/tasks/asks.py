"""What the judge stage asks an engine about a task prompt, and what the engine answers.

The stage (:mod:`stylisticbias.families.tasks.judge.judging`) turns every (task prompt, unit) into a
:class:`TaskAsk`: the prompt text (a text-only prompt's ``{description}`` filled in), the image
files it shows in slot order (a pairwise prompt's two, one composite, none for text only), the
labels an exact decoder expands over (None for a free number) and the seed of a generated
answer, and the task's system message if it has one. An engine (``answer_tasks`` of ``hf``
and ``openai``) answers each with a
:class:`TaskReply`: the exact masses over those labels where its decoding computes them, else
the generated text. The task type then reads the reply (:func:`read_reply`): the same parser and
outcome space for every engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from stylisticbias.benchmark import Benchmark, ParserRules, TaskScenario
from stylisticbias.judge.protocol.outcomes import stable_seed
from stylisticbias.judge.protocol.tasks.scenario_task import (
    INVALID,
    Answer,
    ScenarioTask,
    TaskPrompt,
)


@dataclass(frozen=True)
class TaskAsk:
    """One prompt about one unit.

    ``key``: unique within a run (task, variant, unit); ``images``: image file paths in slot
    order; ``rules``: the labels of the exact expansion (None: the answer is a free number and
    is generated); ``seed``: the seed of a generated answer and of the draw from an exact
    distribution; ``system``: the system message (empty: none) -- an engine sends it as a
    system turn where its chat format has one (``openai``: a ``system`` message; ``hf``: the
    chat template's system role, else prepended to the text with a logged note; the simulated
    judge reads no text).
    """

    key: str
    text: str
    images: tuple[str, ...]
    rules: ParserRules | None
    seed: int
    system: str = ""


@dataclass(frozen=True)
class TaskReply:
    """An engine's answer to a :class:`TaskAsk`.

    Exact: ``mass`` (every label of the ask's rules and ``invalid``), ``undecided`` (the mass the
    decoder could not decide) and ``best`` (label -> the most probable answer text with it).
    Generated: ``text`` (``mass`` None). ``refusal``: the server refused (the text is its
    reason).
    """

    text: str | None = None
    mass: Mapping[str, float] | None = None
    undecided: float = 0.0
    best: Mapping[str, str] = field(default_factory=dict)
    refusal: str | None = None


@dataclass(frozen=True)
class ReadReply:
    """A reply read by its task: the response text, the answer and the exact distribution
    over the task's outcomes (None when generated)."""

    response: str
    answer: Answer
    dist: dict[str, float] | None
    undecided: float


def draw_label(mass: Mapping[str, float], undecided: float, seed: int, key: str) -> str:
    """One seeded draw from exact label masses (undecided mass drawn as ``invalid``)."""
    labels = list(mass)
    w = np.array([max(float(mass[x]), 0.0) for x in labels], dtype=np.float64)
    w[labels.index(INVALID)] += max(float(undecided), 0.0)
    cdf = np.cumsum(w / w.sum())
    u = np.random.default_rng(stable_seed(seed, key)).random()
    return labels[min(int(np.searchsorted(cdf, u, side="right")), len(labels) - 1)]


def read_reply(
    task: ScenarioTask,
    scenario: TaskScenario,
    prompt: TaskPrompt,
    benchmark: Benchmark,
    ask: TaskAsk,
    reply: TaskReply,
) -> ReadReply:
    """The task's reading of an engine's reply.

    Generated: the text parsed by the task (invalid answers carry the parser's reason; a refusal
    is invalid with the server's). Exact: the label masses become the task's outcome
    distribution (the undecided mass added to ``invalid``, so no outcome is overstated) and the
    record's answer is one seeded draw from it, with the most probable text of the drawn label
    as its response.
    """
    if reply.refusal is not None:
        text = f"[refused: {reply.refusal}]"
        return ReadReply(text, Answer.invalid(f"the server refused: {reply.refusal}"), None, 0.0)
    if reply.mass is None:
        text = reply.text or ""
        return ReadReply(text, task.parse(text, scenario, prompt, benchmark), None, 0.0)
    dist = task.distribution(reply.mass, scenario, prompt, benchmark)
    dist[INVALID] = dist.get(INVALID, 0.0) + float(reply.undecided)
    total = sum(dist.values())
    dist = {k: v / total for k, v in dist.items()} if total > 0 else dist
    label = draw_label(reply.mass, reply.undecided, ask.seed, ask.key)
    text = reply.best.get(label, "")
    if label == INVALID:
        why = (
            task.parse(text, scenario, prompt, benchmark).reason
            if label in reply.best
            else "drawn from the undecided mass (no answer text decided within the token limit)"
        )
        return ReadReply(text, Answer.invalid(why or "no option label"), dist, reply.undecided)
    answer = task.parse(text, scenario, prompt, benchmark) if text else None
    want = task.outcome_of(label, scenario, prompt, benchmark)
    if answer is None or answer.outcome != want:  # the bare label (an option's value included)
        answer = task.parse(label.upper(), scenario, prompt, benchmark)
        answer = answer if answer.outcome == want else Answer(want)
    return ReadReply(text, answer, dist, reply.undecided)
