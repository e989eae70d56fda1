"""Planted designs with the structure real task data has, drawn directly (numpy, no judge):
per-photo appeal, per-source cluster effects and unequal cluster sizes. They feed the task
tables' builders (:mod:`.tables`) in the calibration of their tests and intervals
(:func:`~.calibration.valid_inference`) and the fast tests that catch a pooled test.

* :class:`SalaryDesign` (REFLECT salary): source photos (the cluster) x race x gender x
  occupation; log salary = occupation level + effect(race, gender) + photo effect + photo x
  group deviation (a random slope: the group gap differs by photo, mean 0) + noise; each photo
  x group x occupation answered a random number of times (unequal clusters), some invalid.
* :class:`McqDesign` (REFLECT MCQ): the proportional-odds choice of
  :func:`~stylisticbias.judge.engines.simulated.tasks.choice_k_probs` with a per-photo appeal
  on the latent scale.
* :class:`VignetteDesign` (VIGNETTE): instances of four identities, every pair in both orders
  per term and repeat (a random number of repeats per instance); each identity's photo in an
  instance has its own appeal (logit scale) that moves every question showing it; the
  decision question asked with the image and text-only (no photo, no appeal).

Every design's ``null`` draw keeps the structure and sets the planted effects to 0.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import expit

from stylisticbias.judge.engines.simulated.tasks import choice_k_probs

_GH = np.polynomial.hermite_e.hermegauss(40)  # nodes, weights for E[f(Z)], Z ~ N(0, 1)


def normal_mean(f: Callable[[float], np.ndarray], sd: float) -> np.ndarray:
    """E[f(Z)] for Z ~ N(0, sd^2) (Gauss-Hermite, 40 nodes)."""
    z, w = _GH
    vals = np.array([f(sd * zi) for zi in z])
    return np.tensordot(w / w.sum(), vals, axes=1)


# ---- REFLECT salary -----------------------------------------------------------------------------
@dataclass(frozen=True)
class SalaryDesign:
    """A REFLECT salary design (see the module doc); effects on the log scale."""

    photos: int = 48
    occupations: tuple[float, ...] = (200_000, 150_000, 90_000, 80_000, 60_000, 40_000)
    races: tuple[str, ...] = ("white", "black", "asian", "latino", "middle_eastern")
    genders: tuple[str, ...] = ("female", "male")
    answers: tuple[int, int] = (1, 4)  # per photo x group x occupation: uniform on [lo, hi]
    photo_sd: float = 0.25
    slope_sd: float = 0.05
    noise_sd: float = 0.2
    invalid: float = 0.03
    race_effect: Mapping[str, float] = field(
        default_factory=lambda: {"black": -0.04, "asian": 0.03}
    )
    gender_effect: Mapping[str, float] = field(default_factory=lambda: {"male": 0.04})
    interaction: Mapping[str, float] = field(default_factory=lambda: {"black-male": -0.05})

    @property
    def groups(self) -> list[str]:
        """``<race>-<gender>`` labels (the records' group keys)."""
        return [f"{r}-{g}" for r in self.races for g in self.genders]

    def effect(self, group: str, null: bool) -> float:
        """The planted log-scale effect of ``group`` (0 under the null)."""
        if null:
            return 0.0
        r, g = group.rsplit("-", 1)
        return (
            self.race_effect.get(r, 0.0)
            + self.gender_effect.get(g, 0.0)
            + self.interaction.get(group, 0.0)
        )

    def gap_truth(self, ref: str) -> dict[str, float]:
        """Gap% of each group vs ``ref`` (the random effects cancel in the ratio of means)."""
        return {
            g: (math.exp(self.effect(g, False) - self.effect(ref, False)) - 1) * 100
            for g in self.groups
        }

    def draw(self, rng: np.random.Generator, null: bool) -> list[tuple[int, pd.DataFrame]]:
        """(scenario id 1.., answers ``unit``, ``group``, ``value``) per occupation."""
        groups = self.groups
        eff = np.array([self.effect(g, null) for g in groups])
        photo = rng.normal(0, self.photo_sd, self.photos)
        slope = rng.normal(0, self.slope_sd, (self.photos, len(groups)))
        out = []
        for j, level in enumerate(self.occupations):
            reps = rng.integers(self.answers[0], self.answers[1] + 1, (self.photos, len(groups)))
            p_idx, g_idx = np.nonzero(np.ones_like(reps))
            p_idx, g_idx = np.repeat(p_idx, reps.ravel()), np.repeat(g_idx, reps.ravel())
            n = len(p_idx)
            logv = (
                math.log(level)
                + eff[g_idx]
                + photo[p_idx]
                + slope[p_idx, g_idx]
                + rng.normal(0, self.noise_sd, n)
            )
            value = np.where(rng.random(n) < self.invalid, np.nan, np.exp(logv))
            out.append(
                (
                    j + 1,
                    pd.DataFrame(
                        {
                            "unit": np.char.add("p", p_idx.astype(str)),
                            "group": np.asarray(groups)[g_idx],
                            "value": value,
                        }
                    ),
                )
            )
        return out


# ---- REFLECT MCQ --------------------------------------------------------------------------------
@dataclass(frozen=True)
class McqDesign:
    """A REFLECT MCQ design: six salary brackets, per-photo appeal on the latent scale."""

    photos: int = 48
    groups: tuple[str, ...] = ("white-female", "white-male", "black-female", "black-male")
    base: tuple[float, ...] = (0.1, 0.2, 0.3, 0.2, 0.1, 0.1)
    values: tuple[float, ...] = (10_000, 30_000, 50_000, 70_000, 90_000, 110_000)
    answers: tuple[int, int] = (1, 2)
    appeal_sd: float = 0.5
    invalid: float = 0.03
    shift: Mapping[str, float] = field(
        default_factory=lambda: {"black-male": -0.6, "white-male": 0.3}
    )

    @property
    def labels(self) -> list[str]:
        """Option labels A, B, ..."""
        return [chr(65 + i) for i in range(len(self.base))]

    def marginal(self, group: str) -> np.ndarray:
        """The option probabilities of ``group`` averaged over the photo appeal."""
        s = self.shift.get(group, 0.0)
        return normal_mean(lambda a: choice_k_probs(self.base, s + a), self.appeal_sd)

    def draw(self, rng: np.random.Generator, null: bool) -> pd.DataFrame:
        """Answers ``unit``, ``group``, ``choice`` (``invalid`` for an invalid answer)."""
        shift = np.array([0.0 if null else self.shift.get(g, 0.0) for g in self.groups])
        appeal = rng.normal(0, self.appeal_sd, self.photos)
        reps = rng.integers(self.answers[0], self.answers[1] + 1, (self.photos, len(self.groups)))
        p_idx, g_idx = np.nonzero(np.ones_like(reps))
        p_idx, g_idx = np.repeat(p_idx, reps.ravel()), np.repeat(g_idx, reps.ravel())
        b = np.asarray(self.base) / np.sum(self.base)
        theta = np.log(np.cumsum(b)[:-1] / (1 - np.cumsum(b)[:-1]))
        cdf = expit(theta[None, :] - (shift[g_idx] + appeal[p_idx])[:, None])
        choice = (rng.random(len(p_idx))[:, None] > cdf).sum(axis=1)
        labels = np.asarray(self.labels, dtype=object)[choice]
        labels[rng.random(len(p_idx)) < self.invalid] = "invalid"
        return pd.DataFrame(
            {
                "unit": np.char.add("p", p_idx.astype(str)),
                "group": np.asarray(self.groups)[g_idx],
                "choice": labels,
            }
        )


# ---- VIGNETTE -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class VignetteDesign:
    """A VIGNETTE design (see the module doc): effects on the logit scale per term."""

    instances: int = 40
    identities: tuple[str, ...] = ("doctor", "farmer", "teacher", "athlete")
    terms: tuple[str, ...] = ("friendly", "unfriendly")
    repeats: tuple[int, int] = (1, 3)  # per instance: uniform on [lo, hi]
    appeal_sd: float = 0.5
    position_bias: float = 0.25
    invalid: float = 0.02
    term_effect: Mapping[str, Mapping[str, float]] = field(
        default_factory=lambda: {
            "friendly": {"doctor": 0.6, "athlete": -0.4},
            "unfriendly": {"doctor": 0.3, "athlete": -0.4},
        }
    )
    image_effect: Mapping[str, float] = field(
        default_factory=lambda: {"doctor": 0.5, "farmer": -0.3}
    )

    def _answers(
        self,
        rng: np.random.Generator,
        eff: np.ndarray,
        appeal: np.ndarray | None,
        reps: np.ndarray,
        activity: str,
    ) -> pd.DataFrame:
        """Option rows (``unit``, ``identity``, ``partner``, ``activity``, ``selected``) of
        every pair x order x repeat of every instance; ``eff``: per identity (logit)."""
        pairs = np.array(list(itertools.combinations(range(len(self.identities)), 2)))
        rows = []
        for order in (0, 1):
            inst = np.repeat(np.arange(self.instances), reps)
            i_idx = np.repeat(inst, len(pairs))
            a, b = np.tile(pairs[:, 0], len(inst)), np.tile(pairs[:, 1], len(inst))
            d = eff[a] - eff[b] + (self.position_bias if order == 0 else -self.position_bias)
            if appeal is not None:
                d = d + appeal[i_idx, a] - appeal[i_idx, b]
            a_chosen = rng.random(len(d)) < expit(d)
            valid = rng.random(len(d)) >= self.invalid
            rows.append((i_idx[valid], a[valid], b[valid], a_chosen[valid]))
        i_idx, a, b, ch = (np.concatenate(x) for x in zip(*rows))
        ids = np.asarray(self.identities, dtype=object)
        unit = np.char.add("i", i_idx.astype(str))
        return pd.DataFrame(
            {
                "unit": np.concatenate([unit, unit]),
                "identity": np.concatenate([ids[a], ids[b]]),
                "partner": np.concatenate([ids[b], ids[a]]),
                "activity": activity,
                "selected": np.concatenate([ch, ~ch]),
            }
        )

    def draw(
        self, rng: np.random.Generator, null: bool
    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
        """(term options of every term, decision options with the image, text-only)."""
        k = len(self.identities)
        appeal = rng.normal(0, self.appeal_sd, (self.instances, k))
        reps = rng.integers(self.repeats[0], self.repeats[1] + 1, self.instances)
        terms = []
        for t in self.terms:
            eff = np.array(
                [0.0 if null else self.term_effect.get(t, {}).get(i, 0.0) for i in self.identities]
            )
            terms.append(self._answers(rng, eff, appeal, reps, t))
        img_eff = np.array(
            [0.0 if null else self.image_effect.get(i, 0.0) for i in self.identities]
        )
        image = self._answers(rng, img_eff, appeal, reps, "decision")
        text = self._answers(rng, np.zeros(k), None, reps, "decision")
        return pd.concat(terms, ignore_index=True), image, text

    def _p(self, d: float, appeal: bool = True) -> float:
        """P(chosen) at logit difference ``d``, averaged over both orders and the appeal."""
        sd = math.sqrt(2) * self.appeal_sd if appeal else 0.0
        b = self.position_bias
        return float(normal_mean(lambda z: (expit(d + b + z) + expit(d - b + z)) / 2, sd))

    def pair_comp_truth(self) -> dict[str, float]:
        """``i1|i2`` -> the expected PairComp under the planted effects (equal weights per
        term, partner and order: the design is balanced in expectation)."""
        out = {}
        for i1 in self.identities:
            for i2 in self.identities:
                if i1 == i2:
                    continue
                others = [o for o in self.identities if o not in (i1, i2)]
                w, wo = [], []
                for t in self.terms:
                    e = self.term_effect.get(t, {})
                    w.append(self._p(e.get(i1, 0.0) - e.get(i2, 0.0)))
                    wo += [self._p(e.get(i1, 0.0) - e.get(o, 0.0)) for o in others]
                out[f"{i1}|{i2}"] = float(np.mean(w) - np.mean(wo))
        return out

    def text_vs_image_truth(self) -> dict[str, float]:
        """identity -> the expected with-image minus text-only selection share."""
        e = self.image_effect
        out = {}
        for i in self.identities:
            img = np.mean(
                [self._p(e.get(i, 0.0) - e.get(o, 0.0)) for o in self.identities if o != i]
            )
            out[i] = float(img - 0.5)
        return out


#: design set -> protocol -> the valid-inference study's design arguments. ``default`` is the
#: studies' own; ``few-clusters`` is harsher: 20 source photos / 12 instances, strong skewed
#: (log-normal) cluster effects, random slopes three times larger and cluster sizes that vary
#: up to eightfold -- the regime where cluster-robust inference is hardest.
DESIGN_SETS: dict[str, dict[str, dict[str, object]]] = {
    "default": {"reflect": {}, "vignette": {}},
    "few-clusters": {
        "reflect": {
            "design": SalaryDesign(photos=20, photo_sd=0.6, slope_sd=0.15, answers=(1, 8)),
            "mcq": McqDesign(photos=20, appeal_sd=1.0, answers=(1, 4)),
        },
        "vignette": {
            "design": VignetteDesign(instances=12, appeal_sd=1.0, repeats=(1, 6), invalid=0.08)
        },
    },
}
