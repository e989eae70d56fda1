"""Planted effects of the simulated judge: loading and validating the planted-effects file.

The planted effects live in a YAML file (``conf/planted/default.yaml``; the engine's ``planted``
key, or a model's own ``planted`` key, names another). :func:`load_planted` resolves it against a
:class:`~stylisticbias.benchmark.Benchmark` into per-scenario arrays (:class:`PlantedEffects`);
:func:`model_knobs` reads a model's own knobs (effect scale, noise, invalid rate, seed, format
biases) from its config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.errors import StylisticBiasError

DEFAULT_PLANTED = "conf/planted/default.yaml"
#: a protocol's own planted effects, used when neither the model nor the engine names a file
PROTOCOL_PLANTED = "conf/planted/{protocol}.yaml"


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


def load_planted(
    source: str | Path | Mapping[str, Any] | None, benchmark: Benchmark
) -> PlantedEffects:
    """Read and validate a planted-effects file (or mapping) against ``benchmark``; ``None``:
    the protocol's own file (``conf/planted/<protocol>.yaml``) if it has one, else
    :data:`DEFAULT_PLANTED` -- so one simulated judge serves every protocol of an experiment.

    Unknown scenario ids, scenario categories, demographic groups, attributes or values raise
    :class:`StylisticBiasError` naming the file, the key and the valid choices.
    """
    if source is None:
        source = protocol_planted(benchmark.name)
    if isinstance(source, Mapping):
        cfg, where = dict(source), "planted"
    else:
        path = Path(source)
        if not path.is_absolute():
            from stylisticbias.config import project_root

            path = project_root() / path
        if not path.exists():
            raise StylisticBiasError(f"{path}: planted-effects file not found")
        from stylisticbias.config import load_yaml_file

        cfg = load_yaml_file(path) or {}  # one line on bad bytes or bad YAML
        where = str(source)
    known = {
        "baseline",
        "sensitivity",
        "demographics",
        "categories",
        "variations",
        "interactions",
        "position_bias",
        "letter_bias",
    }
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
class ModelKnobs:
    """A simulated model's own knobs (its config, falling back to the planted format biases)."""

    effect_scale: float
    noise_sd: float
    invalid_rate: float
    seed: int
    position_bias: float
    letter_bias: float


def model_knobs(model_cfg: Mapping[str, Any], planted: PlantedEffects) -> ModelKnobs:
    """Validate and read the knobs of ``model_cfg`` (errors name ``conf/model/<name>.yaml``)."""
    name = model_cfg.get("name", "?")
    try:
        knobs = ModelKnobs(
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


def protocol_planted(protocol: str) -> str:
    """The planted-effects file of ``protocol`` when a model names none: its own, or the default."""
    from stylisticbias.config import project_root

    own = PROTOCOL_PLANTED.format(protocol=protocol)
    return own if (project_root() / own).is_file() else DEFAULT_PLANTED


def planted_source(model_cfg: Mapping[str, Any], engine_cfg: Mapping[str, Any] | None) -> Any:
    """The planted-effects file a model names (its own ``planted``, else the engine's), or None:
    the protocol's own (:func:`load_planted`)."""
    return model_cfg.get("planted") or (engine_cfg or {}).get("planted") or None
