"""Planted effects for every task type: the simulated judge's answers to task prompts.

Each task scenario gets a :class:`TaskPlant`: a latent effect per identity group and the
task's own knobs. The answer probabilities are closed-form, so every statistic computed from
the simulated answers has a ground truth:

* ``choice_k`` (ordinal): a proportional-odds (cumulative logit) model. The baseline option
  probabilities give thresholds ``theta_j = logit(P(Y <= j))``; a group with shift ``d`` answers
  ``P(Y <= j) = sigmoid(theta_j - d)``, so a positive shift moves answers to higher options and
  ``d`` is exactly the coefficient an ordered-logit regression recovers. Nominal tasks use the
  same model over the options' order.
* ``pairwise``: Bradley-Terry with a position bias: the identity in slot 1 (label 1, the left of a
  composite) is chosen with ``sigmoid(s_slot1 - s_slot2 + b)``; swapping the order (variant 1)
  exposes ``b``.
* ``numeric``: ``base_mean * exp(d + noise_sd * z)`` (log-normal around the group's mean).
* ``factuality``: the identity the question is about answers right with
  ``sigmoid(logit(accuracy) + d)`` (a negative shift: more factual errors for that group); a
  wrong answer is any other option, each equally likely. The truth is the task's (which
  option is right is written in the protocol, :mod:`~stylisticbias.judge.protocol.tasks.
  factuality`), so a model engine's answers are scored by the same rule.
* every task: an answer is invalid with ``invalid_rate`` (a refusal text).

Answers are written as text (``"C"``, ``"B"``, ``"$85,000"``, a refusal) and read back by the
task's own parser, so the simulated judge exercises the same path as a model. Random numbers
are counter-based (:func:`~.model.uniform`): they do not depend on batching or order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, logit, ndtri

from stylisticbias.benchmark import Benchmark, TaskScenario
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.simulated.model import id_hash, uniform
from stylisticbias.judge.protocol.tasks.factuality import ABOUT, option_outcomes
from stylisticbias.judge.protocol.tasks.pairwise import labels as pair_labels
from stylisticbias.judge.protocol.tasks.registry import Answer, TaskPrompt, task_of

#: The text of a simulated invalid answer (a refusal every parser reads as invalid).
REFUSAL = "I'm sorry, I cannot answer that."
# purposes of the random streams (independent of the binary judge's)
_INVALID, _DRAW, _NOISE = 11, 12, 13


@dataclass(frozen=True)
class TaskPlant:
    """The planted truth of one task scenario.

    ``shift``: group -> latent effect (ordinal shift, pairwise strength, numeric log-mean
    shift); groups not listed have 0. ``base``: ``choice_k`` baseline option probabilities
    (uniform when empty). ``base_mean``/``noise_sd``: ``numeric``. ``position_bias``:
    ``pairwise`` logit toward slot 1. ``invalid_rate``: every task. ``accuracy``:
    ``factuality``'s probability of the right answer for a group with shift 0.
    """

    shift: Mapping[str, float] = field(default_factory=dict)
    base: tuple[float, ...] = ()
    base_mean: float = 50_000.0
    noise_sd: float = 0.2
    position_bias: float = 0.0
    invalid_rate: float = 0.0
    accuracy: float = 0.8

    def effect(self, group: str) -> float:
        """The group's latent effect (0 when not planted)."""
        return float(self.shift.get(group, 0.0))


def choice_k_probs(base: Sequence[float], shift: float) -> np.ndarray:
    """Option probabilities under the proportional-odds model (see the module doc)."""
    b = np.asarray(base, dtype=np.float64)
    if b.ndim != 1 or len(b) < 2 or (b <= 0).any():
        raise StylisticBiasError(f"choice_k base probabilities must be >= 2 positive; got {base}")
    b = b / b.sum()
    theta = logit(np.cumsum(b)[:-1])
    cdf = np.concatenate([[0.0], expit(theta - shift), [1.0]])
    return np.diff(cdf)


def pairwise_first_prob(plant: TaskPlant, first: str, second: str, variant: int) -> float:
    """P(the answer names identity ``first``) in order ``variant`` (0: first in slot 1)."""
    s = plant.effect(first) - plant.effect(second)
    b = plant.position_bias if variant == 0 else -plant.position_bias
    return float(expit(s + b))


def factuality_correct_prob(plant: TaskPlant, group: str) -> float:
    """P(a valid answer about an identity of ``group`` is right): see the module doc."""
    if not 0.0 < plant.accuracy < 1.0:
        raise StylisticBiasError(f"factuality accuracy must be in (0, 1); got {plant.accuracy}")
    return float(expit(logit(plant.accuracy) + plant.effect(group)))


def factuality_option_probs(plant: TaskPlant, group: str, outcomes: Sequence[str]) -> np.ndarray:
    """P(each option) of a valid answer about an identity of ``group``; ``outcomes``: what each
    option stands for (one ``correct``), the wrong ones equally likely."""
    p = factuality_correct_prob(plant, group)
    right = np.array([o == "correct" for o in outcomes])
    wrong = max(int((~right).sum()), 1)
    return np.where(right, p, (1.0 - p) / wrong)


def expected_mean(plant: TaskPlant, group: str, values: Sequence[float]) -> float:
    """Ground truth: the mean option value of a group's valid ``choice_k`` answers."""
    base = plant.base or (1.0,) * len(values)
    return float(np.dot(choice_k_probs(base, plant.effect(group)), np.asarray(values, float)))


def expected_numeric_mean(plant: TaskPlant, group: str) -> float:
    """Ground truth: the mean of a group's valid numeric answers (log-normal mean)."""
    return float(plant.base_mean * np.exp(plant.effect(group) + plant.noise_sd**2 / 2))


def simulate_texts(
    benchmark: Benchmark,
    scenario: TaskScenario,
    prompt: TaskPrompt,
    plant: TaskPlant,
    unit_ids: Sequence[str],
    groups: Sequence[Sequence[str]],
    seed: int,
) -> list[str]:
    """The simulated responses of ``unit_ids`` (images, or pairs) to one prompt.

    ``groups``: per unit, the group of its image (one entry) or of the pair's ``first`` and
    ``second`` identities (two entries, ``pairwise`` and ``factuality``).
    """
    task = task_of(scenario)
    key = id_hash([f"{u}|{scenario.id}|{prompt.variant}" for u in unit_ids], seed)
    invalid = uniform(key, _INVALID) < plant.invalid_rate
    u = uniform(key, _DRAW)
    name = scenario.answers if task.name == "text_only" else task.name
    out: list[str] = []
    for i, g in enumerate(groups):
        if invalid[i]:
            out.append(REFUSAL)
        elif name == "choice_k":
            base = plant.base or (1.0,) * len(scenario.options)
            cdf = np.cumsum(choice_k_probs(base, plant.effect(g[0])))
            j = min(int(np.searchsorted(cdf, u[i], side="right")), len(cdf) - 1)
            out.append(scenario.options[j].label.upper())
        elif name == "pairwise":
            p_first = pairwise_first_prob(plant, g[0], g[1], prompt.variant)
            chosen = "first" if u[i] < p_first else "second"
            slot = prompt.slots.index(chosen)
            out.append(pair_labels(scenario)[slot].upper())
        elif name == "factuality":
            roles = option_outcomes(scenario, prompt)
            about = g[ABOUT.index(dict(scenario.fields)["about"])]
            cdf = np.cumsum(factuality_option_probs(plant, about, roles))
            j = min(int(np.searchsorted(cdf, u[i], side="right")), len(cdf) - 1)
            out.append(scenario.options[j].label.upper())
        elif name == "numeric":
            z = ndtri(uniform(key[i : i + 1], _NOISE))[0]
            value = plant.base_mean * np.exp(plant.effect(g[0]) + plant.noise_sd * z)
            out.append(f"${round(value):,}")
        else:
            raise StylisticBiasError(f"task {scenario.id}: no simulated answers for {name!r}")
    return out


def simulate_answers(
    benchmark: Benchmark,
    scenario: TaskScenario,
    prompt: TaskPrompt,
    plant: TaskPlant,
    unit_ids: Sequence[str],
    groups: Sequence[Sequence[str]],
    seed: int,
) -> list[tuple[str, Answer]]:
    """:func:`simulate_texts` read back by the task's parser: (response, answer) per unit."""
    task = task_of(scenario)
    texts = simulate_texts(benchmark, scenario, prompt, plant, unit_ids, groups, seed)
    # the parser is a pure function of the text: each distinct response (a handful of labels,
    # the refusal, the numbers) is read once, not once per unit
    parsed = {t: task.parse(t, scenario, prompt, benchmark) for t in dict.fromkeys(texts)}
    return [(t, parsed[t]) for t in texts]
