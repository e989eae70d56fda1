"""The ``judge`` section as the settings every engine shares, checked before a judge run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cache, lru_cache
from typing import Any

from omegaconf import OmegaConf

from stylisticbias.benchmark import Benchmark, select_ids
from stylisticbias.config import conf_dir, load_group_option, read_config_text
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import family_of
from stylisticbias.spec.engines import ENGINE_SPECS
from stylisticbias.spec.parse import typed, with_defaults
from stylisticbias.spec.sections import JudgeSpec


@lru_cache(maxsize=1)
def _defaults() -> tuple[tuple[str, Any], ...]:
    """The ``judge`` section of ``conf/config.yaml``: the one source of the keys a partial
    section (a hand-written ``params``, a test) leaves out."""
    text = read_config_text(conf_dir() / "config.yaml")  # one line on a byte that is not UTF-8
    cfg = OmegaConf.to_container(OmegaConf.create(text).judge, resolve=True)
    assert isinstance(cfg, dict)
    return tuple(cfg.items())


def judge_spec(judge_cfg: Mapping[str, Any]) -> JudgeSpec:
    """``judge_cfg`` as the typed :class:`~stylisticbias.spec.sections.JudgeSpec` (its checks).

    Keys it leaves out come from ``conf/config.yaml``; keys that are not judge settings are
    ignored (a composed section has none: composition rejects them). A bad value is one
    :class:`~stylisticbias.errors.StylisticBiasError` line naming the key.
    """
    known = {f.name for f in fields(JudgeSpec)}
    given = {k: v for k, v in dict(judge_cfg).items() if k in known}
    return typed(JudgeSpec, {**dict(_defaults()), **given}, "params.yaml judge")


@dataclass(frozen=True)
class JudgeSettings:
    """What every engine shares: which images, orderings, seeds and the decoding protocol."""

    images: str
    orderings: tuple[int, ...]
    seeds: tuple[int, ...]
    temperature: float
    max_new_tokens: int

    @classmethod
    def from_config(
        cls, judge_cfg: Mapping[str, Any], ordering_ids: Sequence[int]
    ) -> JudgeSettings:
        """Parse and check ``judge_cfg`` (:func:`judge_spec`), its orderings resolved against
        the protocol's (``ordering_ids``, ``Benchmark.ordering_ids``; ``all`` = every one)."""
        spec = judge_spec(judge_cfg)
        orderings = select_ids("orderings", spec.orderings, ordering_ids)
        return cls(
            spec.images, tuple(orderings), tuple(spec.seeds), spec.temperature, spec.max_new_tokens
        )


def check_scenarios(scenarios: Any, benchmark: Benchmark) -> None:
    """``judge.scenarios`` is ``all`` (or null) or a list of the protocol's scenario ids."""
    if scenarios in (None, "all"):
        return
    if not isinstance(scenarios, list):
        raise StylisticBiasError(
            f"judge.scenarios: {scenarios!r}; valid: all or a list of ids "
            f"(1-{len(benchmark.scenarios)})"
        )
    lookup = family_of(benchmark).hook("scenario")  # a scenario, or a task, by id
    for sid in scenarios:
        try:
            lookup(benchmark, int(sid))
        except (StylisticBiasError, ValueError, TypeError) as exc:
            raise StylisticBiasError(f"judge.scenarios: {exc}") from None


def check_judge_section(judge_cfg: Mapping[str, Any], benchmark: Benchmark) -> JudgeSettings:
    """Every ``judge`` setting checked against the protocol (orderings, scenarios, seeds,
    temperature...): cheap, so a stage runs it before loading any table or judging library."""
    settings = JudgeSettings.from_config(judge_cfg, benchmark.ordering_ids)
    check_scenarios(judge_cfg.get("scenarios", "all"), benchmark)
    return settings


@cache
def _engine_defaults(name: str) -> tuple[tuple[str, Any], ...]:
    return tuple(load_group_option("engine", name).items())


def engine_settings(engine_cfg: Mapping[str, Any], kind: str) -> Any:
    """An engine section as its typed spec (``stylisticbias.spec.engines``), the keys it leaves
    out taken from ``conf/engine/<name>.yaml`` -- the one source of every engine default.

    ``kind`` names the engine when the section does not (``engine.name``); a section of another
    engine, an unknown key or a bad value is one :class:`StylisticBiasError` line.
    """
    name = str(engine_cfg.get("name") or kind)
    if name != kind:
        raise StylisticBiasError(f"engine.name={name!r}: this engine is {kind!r}")
    if name not in ENGINE_SPECS:  # pragma: no cover - every engine class has a spec
        raise StylisticBiasError(f"engine.name={name!r}; valid: {', '.join(ENGINE_SPECS)}")
    return with_defaults(
        ENGINE_SPECS[name], dict(_engine_defaults(name)), engine_cfg, f"engine {name}"
    )
