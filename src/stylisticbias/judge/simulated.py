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
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from PIL import Image
from scipy.special import expit, ndtri

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.base import ImageItem, JudgeEngine

DEFAULT_PLANTED = "conf/planted/default.yaml"

#: texts of invalid responses (picked deterministically per response)
INVALID_TEXTS: tuple[str, ...] = (
    "I cannot judge that from appearance.",
    "(a) or (b)",
    "Neither.",
    "Both (a) and (b) could apply.",
)
_RESPONSES = np.array(["(a)", "(b)", *INVALID_TEXTS], dtype=object)
_CHOICES = np.array(["positive", "negative", "invalid"], dtype=object)

# purposes of random streams (mixed into the hash so streams are independent)
_NOISE, _DRAW, _TEXT = 1, 2, 3
_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


# ---------------------------------------------------------------------------------------------
# counter-based randomness
# ---------------------------------------------------------------------------------------------
def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser, elementwise on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _id_hash(ids: Sequence[str], model_seed: int) -> np.ndarray:
    """A stable 64-bit key per image id, mixed with the model seed."""
    raw = np.array(
        [
            int.from_bytes(hashlib.blake2b(i.encode(), digest_size=8).digest(), "little")
            for i in ids
        ],
        dtype=np.uint64,
    )
    return _splitmix64(raw ^ _splitmix64(np.array([model_seed], dtype=np.uint64)))


def _uniform(key: np.ndarray, *counters: np.ndarray | int) -> np.ndarray:
    """Uniform(0, 1) numbers from a key array and broadcastable integer counters."""
    h = key
    with np.errstate(over="ignore"):
        for c in counters:
            h = _splitmix64(h ^ (np.asarray(c).astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93)))
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 2**53)


# ---------------------------------------------------------------------------------------------
# planted effects
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlantedEffects:
    """The planted-effect tables, resolved against a benchmark (arrays indexed by scenario)."""

    baseline: np.ndarray  # (S,)
    sensitivity: np.ndarray  # (S,)
    demographics: dict[str, np.ndarray]  # axis -> (G_axis, S)
    variations: np.ndarray  # (V + 1, S); row V is "no variation" (zeros)
    interactions: dict[str, np.ndarray]  # axis -> (V + 1, G_axis, S)
    position_bias: float
    letter_bias: float
    groups: dict[str, tuple[str, ...]]  # axis -> group names (benchmark order)
    value_index: dict[tuple[str, str], int]  # (attribute, value) -> row
    source: str


def _effect_row(spec: Any, benchmark: Benchmark, where: str) -> np.ndarray:
    """``{default: x, <scenario category>: y}`` -> per-scenario array."""
    if spec is None:
        spec = {}
    if isinstance(spec, int | float):
        spec = {"default": spec}
    if not isinstance(spec, Mapping):
        raise StylisticBiasError(f"{where}: expected a mapping of scenario category -> logit")
    cats = benchmark.scenario_categories
    bad = [k for k in spec if k != "default" and k not in cats]
    if bad:
        raise StylisticBiasError(
            f"{where}: unknown scenario category {bad[0]!r}; valid: default, {', '.join(cats)}"
        )
    default = float(spec.get("default", 0.0))
    return np.array([float(spec.get(s.category, default)) for s in benchmark.scenarios])


def _group_index(benchmark: Benchmark, axis: str, group: str, where: str) -> int:
    groups = benchmark.demographics[axis]
    if group not in groups:
        raise StylisticBiasError(
            f"{where}: unknown {axis} group {group!r}; valid: {', '.join(groups)}"
        )
    return groups.index(group)


def load_planted(source: str | Path | Mapping[str, Any], benchmark: Benchmark) -> PlantedEffects:
    """Read and validate a planted-effects file (or mapping) against ``benchmark``.

    Unknown scenario ids, scenario categories, demographic groups, attributes or values raise
    :class:`StylisticBiasError` naming the file, the key and the valid choices.
    """
    if isinstance(source, Mapping):
        cfg, where = dict(source), "planted"
    else:
        path = Path(source)
        if not path.is_absolute():
            from stylisticbias.config import project_root

            path = project_root() / path
        if not path.exists():
            raise StylisticBiasError(f"{path}: planted-effects file not found")
        cfg = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        where = str(source)
    known = {
        "baseline", "sensitivity", "demographics", "categories", "variations",
        "interactions", "position_bias", "letter_bias",
    }  # fmt: skip
    extra = sorted(set(cfg) - known)
    if extra:
        raise StylisticBiasError(
            f"{where}: unknown key {extra[0]!r}; valid: {', '.join(sorted(known))}"
        )
    scen = benchmark.scenarios
    sid = [s.id for s in scen]

    def per_scenario(spec: Mapping[str, Any] | None, key: str, default: float) -> np.ndarray:
        spec = dict(spec or {})
        out = np.full(len(scen), float(spec.get("default", default)))
        for cat, val in (spec.get("by_category") or {}).items():
            if cat not in benchmark.scenario_categories:
                raise StylisticBiasError(
                    f"{where}: {key}.by_category: unknown scenario category {cat!r}; valid: "
                    + ", ".join(benchmark.scenario_categories)
                )
            out[[i for i, s in enumerate(scen) if s.category == cat]] = float(val)
        for s_id, val in (spec.get("by_scenario") or {}).items():
            if int(s_id) not in sid:
                raise StylisticBiasError(
                    f"{where}: {key}.by_scenario: unknown scenario id {s_id!r}; valid: "
                    + ", ".join(map(str, sid))
                )
            out[sid.index(int(s_id))] = float(val)
        return out

    baseline = per_scenario(cfg.get("baseline"), "baseline", 0.0)
    sensitivity = per_scenario(cfg.get("sensitivity"), "sensitivity", 1.0)

    groups = {a: tuple(benchmark.demographics[a]) for a in DEMOGRAPHIC_AXES}
    demographics = {a: np.zeros((len(groups[a]), len(scen))) for a in DEMOGRAPHIC_AXES}
    for axis, by_group in (cfg.get("demographics") or {}).items():
        if axis not in DEMOGRAPHIC_AXES:
            raise StylisticBiasError(
                f"{where}: demographics: unknown axis {axis!r}; valid: "
                + ", ".join(DEMOGRAPHIC_AXES)
            )
        for group, spec in (by_group or {}).items():
            g = _group_index(benchmark, axis, group, f"{where}: demographics.{axis}")
            demographics[axis][g] = _effect_row(
                spec, benchmark, f"{where}: demographics.{axis}.{group}"
            )

    values = list(benchmark.variations)
    value_index = {(v.attribute, v.value): i for i, v in enumerate(values)}
    variations = np.zeros((len(values) + 1, len(scen)))
    cat_rows: dict[str, np.ndarray] = {}
    for cat, spec in (cfg.get("categories") or {}).items():
        if cat not in benchmark.categories:
            raise StylisticBiasError(
                f"{where}: categories: unknown category {cat!r}; valid: "
                + ", ".join(benchmark.categories)
            )
        cat_rows[cat] = _effect_row(spec, benchmark, f"{where}: categories.{cat}")
    for i, v in enumerate(values):
        if v.category in cat_rows:
            variations[i] = cat_rows[v.category]

    def value_row(attribute: str, value: str, key: str) -> int:
        if (attribute, value) not in value_index:
            try:
                benchmark.variation(attribute, value)  # raises with the valid choices
            except StylisticBiasError as exc:
                raise StylisticBiasError(f"{where}: {key}: {exc}") from None
        return value_index[(attribute, value)]

    for attribute, by_value in (cfg.get("variations") or {}).items():
        for value, spec in (by_value or {}).items():
            i = value_row(str(attribute), str(value), "variations")
            variations[i] = _effect_row(spec, benchmark, f"{where}: variations.{attribute}.{value}")

    interactions = {
        a: np.zeros((len(values) + 1, len(groups[a]), len(scen))) for a in DEMOGRAPHIC_AXES
    }
    for n, inter in enumerate(cfg.get("interactions") or []):
        key = f"interactions[{n}]"
        axis = inter.get("axis")
        if axis not in DEMOGRAPHIC_AXES:
            raise StylisticBiasError(
                f"{where}: {key}.axis: {axis!r}; valid: {', '.join(DEMOGRAPHIC_AXES)}"
            )
        rows = [
            value_row(str(inter["attribute"]), str(val), key) for val in inter.get("values", [])
        ]
        for group, spec in (inter.get("groups") or {}).items():
            g = _group_index(benchmark, axis, group, f"{where}: {key}.groups")
            eff = _effect_row(spec, benchmark, f"{where}: {key}.groups.{group}")
            for r in rows:
                interactions[axis][r, g] += eff

    return PlantedEffects(
        baseline=baseline,
        sensitivity=sensitivity,
        demographics=demographics,
        variations=variations,
        interactions=interactions,
        position_bias=float(cfg.get("position_bias", 0.0)),
        letter_bias=float(cfg.get("letter_bias", 0.0)),
        groups=groups,
        value_index=value_index,
        source=where,
    )


@dataclass(frozen=True)
class _ModelKnobs:
    effect_scale: float
    noise_sd: float
    invalid_rate: float
    seed: int
    position_bias: float
    letter_bias: float


def _knobs(model_cfg: Mapping[str, Any], planted: PlantedEffects) -> _ModelKnobs:
    name = model_cfg.get("name", "?")
    try:
        knobs = _ModelKnobs(
            effect_scale=float(model_cfg.get("effect_scale", 1.0)),
            noise_sd=float(model_cfg.get("noise_sd", 0.0)),
            invalid_rate=float(model_cfg.get("invalid_rate", 0.0)),
            seed=int(model_cfg.get("seed", 0)),
            position_bias=float(model_cfg.get("position_bias", planted.position_bias)),
            letter_bias=float(model_cfg.get("letter_bias", planted.letter_bias)),
        )
    except (TypeError, ValueError) as exc:
        raise StylisticBiasError(f"conf/model/{name}.yaml: {exc}") from None
    if not 0.0 <= knobs.invalid_rate < 1.0:
        raise StylisticBiasError(f"conf/model/{name}.yaml: invalid_rate must be in [0, 1)")
    if knobs.noise_sd < 0:
        raise StylisticBiasError(f"conf/model/{name}.yaml: noise_sd must be >= 0")
    return knobs


def selected_scenarios(benchmark: Benchmark, judge_cfg: Mapping[str, Any]) -> list[int]:
    """Scenario ids a run judges: ``judge.scenarios`` (``all`` or a list of Table 1 ids)."""
    sel = judge_cfg.get("scenarios", "all")
    if sel is None or sel == "all":
        return [s.id for s in benchmark.scenarios]
    if isinstance(sel, str | int):
        sel = [sel]
    ids = []
    for x in sel:
        try:
            ids.append(benchmark.scenario(int(x)).id)
        except (TypeError, ValueError):
            raise StylisticBiasError(
                f"judge.scenarios: {x!r} is not a scenario id; valid: all or ids "
                + ", ".join(str(s.id) for s in benchmark.scenarios)
            ) from None
    return ids


def _planted_source(model_cfg: Mapping[str, Any], engine_cfg: Mapping[str, Any] | None) -> Any:
    return model_cfg.get("planted") or (engine_cfg or {}).get("planted") or DEFAULT_PLANTED


# ---------------------------------------------------------------------------------------------
# the core computation
# ---------------------------------------------------------------------------------------------
def _indices(
    attrs: Sequence[Mapping[str, Any]], planted: PlantedEffects
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Group index per axis and variation row per image (row V = base face)."""
    group_ix: dict[str, np.ndarray] = {}
    for axis in DEMOGRAPHIC_AXES:
        lookup = {g: i for i, g in enumerate(planted.groups[axis])}
        try:
            group_ix[axis] = np.array([lookup[a[axis]] for a in attrs], dtype=np.int64)
        except KeyError as exc:
            raise StylisticBiasError(
                f"simulated judge: unknown {axis} {exc.args[0]!r}; valid: "
                + ", ".join(planted.groups[axis])
            ) from None
    base_row = len(planted.value_index)
    rows = []
    for a in attrs:
        if a.get("attribute") is None or (isinstance(a.get("attribute"), float)):
            rows.append(base_row)
            continue
        key = (str(a["attribute"]), str(a["value"]))
        if key not in planted.value_index:
            raise StylisticBiasError(f"simulated judge: unknown variation {key!r}")
        rows.append(planted.value_index[key])
    return group_ix, np.array(rows, dtype=np.int64)


def _logits(
    image_ids: Sequence[str],
    attrs: Sequence[Mapping[str, Any]],
    planted: PlantedEffects,
    knobs: _ModelKnobs,
    *,
    noise: bool = True,
) -> np.ndarray:
    """Per-image x scenario logit L (N, S) of choosing the positive pole (before format biases)."""
    group_ix, vrow = _indices(attrs, planted)
    demo = sum(planted.demographics[a][group_ix[a]] for a in DEMOGRAPHIC_AXES)
    var = planted.variations[vrow] + sum(
        planted.interactions[a][vrow, group_ix[a]] for a in DEMOGRAPHIC_AXES
    )
    logit = planted.baseline[None, :] + knobs.effect_scale * (
        demo + planted.sensitivity[None, :] * var
    )
    if noise and knobs.noise_sd > 0 and len(image_ids):
        key = _id_hash(image_ids, knobs.seed)
        s = np.arange(logit.shape[1])
        u = _uniform(key[:, None], _NOISE, s[None, :])
        logit = logit + knobs.noise_sd * ndtri(u)
    return np.asarray(logit, dtype=np.float64)


def _format_shift(benchmark: Benchmark, orderings: Sequence[int], knobs: _ModelKnobs) -> np.ndarray:
    """Logit shift toward the positive pole per ordering (position + letter bias)."""
    out = []
    for j in orderings:
        o = benchmark.ordering(int(j))
        pos = 1.0 if o.positive_position == 1 else -1.0
        let = 1.0 if o.positive_letter == "a" else -1.0
        out.append(knobs.position_bias * pos + knobs.letter_bias * let)
    return np.array(out)


class SimulatedJudgeEngine(JudgeEngine):
    """Draws forced-choice answers from planted probabilities; never reads pixels.

    For every image x scenario x ordering x seed (``judge.orderings`` x ``judge.seeds``) one
    response is drawn: ``"(a)"``/``"(b)"`` (the letter the chosen pole carries under the ordering)
    or an invalid text. ``p_pos``/``p_neg``/``p_invalid`` hold the exact simulated probabilities,
    ``p_undecided`` is 0, ``decoding``/``engine`` are ``"simulated"`` and ``simulated`` is True.
    Deterministic given the model seed, whatever the batching.
    """

    reads_pixels = False

    def __init__(
        self,
        model_cfg: Mapping[str, Any],
        engine_cfg: Mapping[str, Any],
        judge_cfg: Mapping[str, Any],
        benchmark: Benchmark,
    ) -> None:
        super().__init__(model_cfg, engine_cfg, judge_cfg, benchmark)
        self.planted = load_planted(_planted_source(model_cfg, engine_cfg), benchmark)
        self.knobs = _knobs(model_cfg, self.planted)
        self.orderings = [
            int(j) for j in judge_cfg.get("orderings", [o.id for o in benchmark.orderings])
        ]
        for j in self.orderings:
            benchmark.ordering(j)
        self.seeds = [int(k) for k in judge_cfg.get("seeds", [1, 2, 3])]
        if not self.seeds or min(self.seeds) < 1:
            raise StylisticBiasError(
                f"judge.seeds: the simulated engine draws seeds >= 1; got {self.seeds}"
            )
        self.scenario_ids = selected_scenarios(benchmark, judge_cfg)
        all_ids = [s.id for s in benchmark.scenarios]
        self._scen_cols = np.array([all_ids.index(i) for i in self.scenario_ids], dtype=np.int64)
        self._shift = _format_shift(benchmark, self.orderings, self.knobs)
        self._pos_letter_is_a = np.array(
            [benchmark.ordering(j).positive_letter == "a" for j in self.orderings]
        )

    def fingerprint(self) -> dict[str, Any]:
        """What determines this engine's output beyond the configs (for resume checks)."""
        return {"planted": self.planted.source, "knobs": self.knobs.__dict__,
                "tables": hashlib.sha256(
                    np.concatenate([self.planted.baseline, self.planted.sensitivity,
                                    self.planted.variations.ravel(),
                                    *[d.ravel() for d in self.planted.demographics.values()],
                                    *[d.ravel() for d in self.planted.interactions.values()]]
                                   ).tobytes()).hexdigest()}  # fmt: skip

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
        logit = _logits(image_ids, attrs, self.planted, self.knobs)[:, self._scen_cols]  # (N, S)
        q = expit(logit[:, :, None] + self._shift[None, None, :])  # (N, S, J)
        inv = self.knobs.invalid_rate
        p_pos = (1.0 - inv) * q
        p_neg = (1.0 - inv) * (1.0 - q)

        key = _id_hash(image_ids, self.knobs.seed) if n else np.zeros(0, dtype=np.uint64)
        s_ix = scen_ids[None, :, None, None]
        j_ix = np.asarray(self.orderings)[None, None, :, None]
        k_ix = np.asarray(self.seeds)[None, None, None, :]
        u = _uniform(key[:, None, None, None], _DRAW, s_ix, j_ix, k_ix)  # (N, S, J, K)
        invalid = u < inv
        positive = ~invalid & (u < inv + p_pos[..., None])
        choice = np.where(invalid, 2, np.where(positive, 0, 1))  # 0 pos, 1 neg, 2 invalid
        pos_a = self._pos_letter_is_a[None, None, :, None]
        letter_b = np.where(positive, ~pos_a, pos_a)  # chose letter (b)?
        resp = letter_b.astype(np.int64)
        if invalid.any():  # which invalid text: hashed only where needed
            ni, si, ji, ki = np.nonzero(invalid)
            t = _uniform(
                key[ni],
                _TEXT,
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
                "response": _RESPONSES[resp.reshape(total)],
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


# ---------------------------------------------------------------------------------------------
# ground truth for calibration
# ---------------------------------------------------------------------------------------------
_GROUPING = ["category", "attribute", "value", "age", "gender", "ethnicity", "body_type"]


def image_attrs(faces_df: pd.DataFrame, variations_df: pd.DataFrame) -> pd.DataFrame:
    """One row per image (base faces, then variations): ids, ``is_base`` and grouping columns."""
    demo = list(DEMOGRAPHIC_AXES)
    f = faces_df[["image_id", "face_id", *demo]].copy()
    f["is_base"] = True
    for c in ("category", "attribute", "value"):
        f[c] = None
    v = variations_df[["image_id", "face_id", "category", "attribute", "value", *demo]].copy()
    v["is_base"] = False
    cols = ["image_id", "face_id", "is_base", *_GROUPING]
    return pd.concat([f[cols], v[cols]], ignore_index=True)


def planted_truth(
    benchmark: Benchmark,
    faces_df: pd.DataFrame,
    variations_df: pd.DataFrame,
    model_cfg: Mapping[str, Any],
    *,
    planted: str | Path | Mapping[str, Any] | None = None,
    orderings: Sequence[int] | None = None,
    scenario_ids: Sequence[int] | None = None,
) -> pd.DataFrame:
    """The TRUE expected phi and delta per image x scenario under the planted effects.

    One row per image of ``faces_df`` and ``variations_df`` (rows with ``status == "ok"`` when a
    ``status`` column is present) x scenario. Columns:

    - ``model``, ``image_id``, ``face_id``, ``is_base``;
    - grouping columns ``category``, ``attribute``, ``value`` (null on base faces), ``age``,
      ``gender``, ``ethnicity``, ``body_type``; ``scenario_id``, ``scenario_category``;
    - ``logit_true``: the image's logit L including its seeded noise draw;
    - ``phi_true``: E[phi] for this image, i.e. the mean over the judged orderings of
      P(positive | valid, ordering) = sigmoid(L + format shift). This is exactly the expected
      value of the paper's estimator given >= 1 valid response (invalid answers are independent
      of the ordering), and equals the exact-decoding phi;
    - ``delta_true``: ``phi_true`` minus its base face's ``phi_true`` (null on base faces or when
      the base face is absent);
    - ``phi_planted`` / ``delta_planted``: the same without the per-image noise (the planted
      signal itself; with small ``noise_sd`` the two are close).

    ``model_cfg`` is the model's config (``effect_scale``, ``noise_sd``, ``seed``, ...);
    ``planted`` overrides its planted-effects file; ``orderings`` defaults to all four and
    ``scenario_ids`` to all scenarios (pass ``judge.scenarios`` of a subset run).
    """
    pe = load_planted(planted or _planted_source(model_cfg, None), benchmark)
    knobs = _knobs(model_cfg, pe)
    ok_f = faces_df[faces_df["status"] == "ok"] if "status" in faces_df else faces_df
    ok_v = (
        variations_df[variations_df["status"] == "ok"]
        if "status" in variations_df
        else variations_df
    )
    img = image_attrs(ok_f, ok_v)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].to_dict(
        "records"
    )
    for a in attrs:
        if a["attribute"] is not None and pd.isna(a["attribute"]):
            a["attribute"] = None
    ids = img["image_id"].tolist()
    js = list(orderings) if orderings is not None else [o.id for o in benchmark.orderings]
    shift = _format_shift(benchmark, js, knobs)
    out = []
    for noise in (True, False):
        L = _logits(ids, attrs, pe, knobs, noise=noise)
        phi = expit(L[:, :, None] + shift[None, None, :]).mean(axis=2)
        out.append((L, phi))
    S = len(benchmark.scenarios)
    df = img.loc[img.index.repeat(S)].reset_index(drop=True)
    df.insert(0, "model", str(model_cfg.get("name", "simulated")))
    df["scenario_id"] = np.tile([s.id for s in benchmark.scenarios], len(img))
    df["scenario_category"] = np.tile([s.category for s in benchmark.scenarios], len(img))
    df["logit_true"] = out[0][0].ravel()
    df["phi_true"] = out[0][1].ravel()
    df["phi_planted"] = out[1][1].ravel()
    base = df.loc[df["is_base"], ["face_id", "scenario_id", "phi_true", "phi_planted"]]
    merged = df[["face_id", "scenario_id"]].merge(
        base, on=["face_id", "scenario_id"], how="left", suffixes=("", "_b")
    )
    df["delta_true"] = np.where(
        df["is_base"], np.nan, df["phi_true"] - merged["phi_true"].to_numpy()
    )
    df["delta_planted"] = np.where(
        df["is_base"], np.nan, df["phi_planted"] - merged["phi_planted"].to_numpy()
    )
    if scenario_ids is not None:
        keep = selected_scenarios(benchmark, {"scenarios": list(scenario_ids)})
        df = df[df["scenario_id"].isin(keep)].reset_index(drop=True)
    return df
