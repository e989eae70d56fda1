"""A judge with *planted* effects that never looks at pixels: the calibration instrument.

The planted effects live in a YAML file (``conf/planted/default.yaml``; the engine's ``planted``
key, or a model's own ``planted`` key, names another). The file's header documents the model:
per image and scenario a logit built from a scenario baseline, identity-level demographic effects,
a variation effect scaled by the scenario's sensitivity, demographic interactions, and seeded
per-image noise; per ordering a position and a letter bias; per response an invalid rate.

Everything is vectorised with NumPy and every random number comes from a counter-based hash of
(model seed, image_id, scenario, ordering, seed), so results do not depend on batching, on the
number of ranks or on resuming. :func:`planted_truth` gives the exact expected phi and delta that
the analysis must recover.

Modules: :mod:`.planted` (loading and validating the planted effects and a model's knobs),
:mod:`.model` (the vectorised probability model and its counter-based randomness),
:mod:`.ground_truth` (:func:`planted_truth`, :func:`image_attrs`) and this one (the engine). The
public names of all of them are re-exported here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image
from scipy.special import expit

from stylisticbias.benchmark import Benchmark
from stylisticbias.judge.engines.base import ImageItem, JudgeEngine
from stylisticbias.judge.engines.simulated.ground_truth import image_attrs, planted_truth
from stylisticbias.judge.engines.simulated.model import (
    DRAW,
    TEXT,
    format_shift,
    id_hash,
    simulated_logits,
    uniform,
)
from stylisticbias.judge.engines.simulated.planted import (
    DEFAULT_PLANTED,
    PlantedEffects,
    load_planted,
    model_knobs,
    planted_source,
    selected_scenarios,
)
from stylisticbias.judge.engines.simulated.tasks import TaskPlant, simulate_answers
from stylisticbias.judge.protocol.tasks.registry import Answer, task_of

__all__ = [
    "DEFAULT_PLANTED",
    "INVALID_TEXTS",
    "PlantedEffects",
    "SimulatedJudgeEngine",
    "image_attrs",
    "load_planted",
    "planted_truth",
    "selected_scenarios",
]

#: texts of invalid responses (picked deterministically per response); ``{0}``/``{1}`` are the
#: protocol's letters
INVALID_TEXTS: tuple[str, ...] = (
    "I cannot judge that from appearance.",
    "({0}) or ({1})",
    "Neither.",
    "Both ({0}) and ({1}) could apply.",
)


def response_texts(letters: Sequence[str]) -> np.ndarray:
    """The drawn texts: ``(first letter)``, ``(second letter)``, then :data:`INVALID_TEXTS`."""
    first, second = letters
    invalid = [t.format(first, second) for t in INVALID_TEXTS]
    return np.array([f"({first})", f"({second})", *invalid], dtype=object)


_CHOICES = np.array(["positive", "negative", "invalid"], dtype=object)


class SimulatedJudgeEngine(JudgeEngine):
    """Draws forced-choice answers from planted probabilities; never reads pixels.

    For every image x scenario x ordering x seed (``judge.orderings`` x ``judge.seeds``) one
    response is drawn: ``"(a)"``/``"(b)"`` (the protocol's letter the chosen pole carries under
    the ordering) or an invalid text. ``p_pos``/``p_neg``/``p_invalid`` hold the exact simulated
    probabilities, ``p_undecided`` is 0, ``decoding``/``engine`` are ``"simulated"`` and
    ``simulated`` is True.
    Deterministic given the model seed, whatever the batching.
    """

    reads_pixels = False
    needs_device = False  # no weights: judged in the stage's process (engine.runner: auto)

    def __init__(
        self,
        model_cfg: Mapping[str, Any],
        engine_cfg: Mapping[str, Any],
        judge_cfg: Mapping[str, Any],
        benchmark: Benchmark,
    ) -> None:
        super().__init__(model_cfg, engine_cfg, judge_cfg, benchmark)
        self.planted = load_planted(planted_source(model_cfg, engine_cfg), benchmark)
        self.knobs = model_knobs(model_cfg, self.planted)
        self.orderings = list(self.settings.orderings)
        self.seeds = list(self.settings.seeds)  # >= 1: checked by the judge spec
        self.scenario_ids = selected_scenarios(benchmark, judge_cfg)
        all_ids = [s.id for s in benchmark.scenarios]
        self._scen_cols = np.array([all_ids.index(i) for i in self.scenario_ids], dtype=np.int64)
        self._shift = format_shift(benchmark, self.orderings, self.knobs)
        self._pos_letter_is_first = np.array(
            [benchmark.ordering(j).positive_is_first_letter for j in self.orderings]
        )
        self._responses = response_texts(benchmark.letters)

    def fingerprint(self) -> dict[str, Any]:
        """What determines this engine's output beyond the configs (for resume checks)."""
        return {
            "planted": self.planted.source,
            "knobs": self.knobs.__dict__,
            "tables": hashlib.sha256(
                np.concatenate(
                    [
                        self.planted.baseline,
                        self.planted.sensitivity,
                        self.planted.variations.ravel(),
                        *[d.ravel() for d in self.planted.demographics.values()],
                        *[d.ravel() for d in self.planted.interactions.values()],
                    ]
                ).tobytes()
            ).hexdigest(),
        }

    def task_answers(
        self,
        task_id: int,
        variant: int,
        plant: TaskPlant,
        unit_ids: Sequence[str],
        groups: Sequence[Sequence[str]],
    ) -> list[tuple[str, Answer]]:
        """Simulated (response, parsed answer) per unit for one prompt of a ``tasks:`` entry
        (its ``variant``-th prompt), drawn from the planted ``plant``
        (:mod:`~stylisticbias.judge.engines.simulated.tasks`) with this model's seed."""
        sc = self.benchmark.task_scenario(task_id)
        prompt = task_of(sc).prompts(sc, self.benchmark)[variant]
        seed = int(self.model_cfg.get("seed", 0))
        return simulate_answers(self.benchmark, sc, prompt, plant, unit_ids, groups, seed)

    def judge(
        self, items: Sequence[ImageItem], images: Sequence[Image.Image | None]
    ) -> pd.DataFrame:
        """Judge a batch (``images`` is ignored)."""
        return self.judge_records(
            [it.image_id for it in items], [it.face_id for it in items], [it.attrs for it in items]
        )

    def judge_records(
        self,
        image_ids: Sequence[str],
        face_ids: Sequence[str],
        attrs: Sequence[Mapping[str, Any]],
    ) -> pd.DataFrame:
        """The JUDGMENTS rows for images given by ids and attribute mappings (vectorised)."""
        n = len(image_ids)
        scen_ids = np.asarray(self.scenario_ids, dtype=np.int64)
        S, J, K = len(scen_ids), len(self.orderings), len(self.seeds)
        logit = simulated_logits(image_ids, attrs, self.planted, self.knobs)[
            :, self._scen_cols
        ]  # (N, S)
        q = expit(logit[:, :, None] + self._shift[None, None, :])  # (N, S, J)
        inv = self.knobs.invalid_rate
        p_pos = (1.0 - inv) * q
        p_neg = (1.0 - inv) * (1.0 - q)

        key = id_hash(image_ids, self.knobs.seed) if n else np.zeros(0, dtype=np.uint64)
        s_ix = scen_ids[None, :, None, None]
        j_ix = np.asarray(self.orderings)[None, None, :, None]
        k_ix = np.asarray(self.seeds)[None, None, None, :]
        u = uniform(key[:, None, None, None], DRAW, s_ix, j_ix, k_ix)  # (N, S, J, K)
        invalid = u < inv
        positive = ~invalid & (u < inv + p_pos[..., None])
        choice = np.where(invalid, 2, np.where(positive, 0, 1))  # 0 pos, 1 neg, 2 invalid
        pos_first = self._pos_letter_is_first[None, None, :, None]
        second = np.where(positive, ~pos_first, pos_first)  # chose the second letter?
        resp = second.astype(np.int64)
        if invalid.any():  # which invalid text: hashed only where needed
            ni, si, ji, ki = np.nonzero(invalid)
            t = uniform(
                key[ni],
                TEXT,
                scen_ids[si],
                np.asarray(self.orderings)[ji],
                np.asarray(self.seeds)[ki],
            )
            resp[ni, si, ji, ki] = 2 + (t * len(INVALID_TEXTS)).astype(np.int64)

        total = n * S * J * K
        shape = (n, S, J, K)

        def expand(a: np.ndarray) -> np.ndarray:  # (N, S, J) -> flat over K
            return np.broadcast_to(a[..., None], shape).reshape(total)

        df = pd.DataFrame(
            {
                "image_id": np.repeat(np.asarray(image_ids, dtype=object), S * J * K),
                "face_id": np.repeat(np.asarray(face_ids, dtype=object), S * J * K),
                "model": self.model_name,
                "engine": "simulated",
                "decoding": "simulated",
                "scenario_id": np.broadcast_to(scen_ids[None, :, None, None], shape).reshape(total),
                "ordering": np.broadcast_to(
                    np.asarray(self.orderings, dtype=np.int64)[None, None, :, None], shape
                ).reshape(total),
                "seed": np.broadcast_to(np.asarray(self.seeds, dtype=np.int64), shape).reshape(
                    total
                ),
                "response": self._responses[resp.reshape(total)],
                "choice": _CHOICES[choice.reshape(total)],
                "p_pos": expand(p_pos),
                "p_neg": expand(p_neg),
                "p_invalid": np.full(total, inv),
                "p_undecided": np.zeros(total),
                "simulated": np.ones(total, dtype=bool),
            }
        )
        return df

    def run_params(self) -> dict[str, Any]:
        """MLflow parameters: the base set plus the simulated knobs."""
        out = super().run_params()
        out.update(
            engine="simulated",
            decoding="simulated",
            planted=self.planted.source,
            effect_scale=self.knobs.effect_scale,
            noise_sd=self.knobs.noise_sd,
            invalid_rate=self.knobs.invalid_rate,
            model_seed=self.knobs.seed,
        )
        return out
