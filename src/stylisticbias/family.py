"""Protocol families: what kind of measurement a protocol file declares (``family:``).

Every protocol file (``conf/benchmark/<name>.yaml``) names its family, a checked field:

- ``variation_shift``: the StylisticBias tables (base faces x single-attribute edits, phi and
  its shift per scenario);
- ``paired_variation``: one image per person before and after one edit (Beauty and the Bias);
- ``tasks``: task-typed questions (pairs, k-way choices, numbers, text-only: REFLECT, VIGNETTE);
- ``soda``: the generator audit of SODA (objects drawn for demographic groups; not judged).

A file without ``family:`` (an older user file) has its family inferred from its shape, with a
warning; an unknown family fails in one line naming the valid ones.

Each family is a package, ``stylisticbias/families/<name>/``, whose ``FAMILY`` (a
:class:`Family`) names what the family does at every stage (:data:`HOOKS`): the stage modules
ask :func:`family_of` once and call the hook; they never branch on a family or protocol name.
:data:`FAMILIES` names the packages without importing them (:mod:`stylisticbias.registry`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stylisticbias.errors import StylisticBiasError
from stylisticbias.registry import Registry

if TYPE_CHECKING:
    from stylisticbias.benchmark import Benchmark

#: Every family, in the order messages list them.
FAMILY_NAMES: tuple[str, ...] = ("variation_shift", "paired_variation", "tasks", "soda")


def check_family(value: object, where: str) -> str:
    """``value`` as a family name; anything else fails in one line naming the valid families."""
    if not isinstance(value, str) or value not in FAMILY_NAMES:
        raise StylisticBiasError(
            f"{where}: family: unknown family {value!r}; valid: {', '.join(FAMILY_NAMES)}"
        )
    return value


#: families whose protocols name a statistics suite, and the suite each must name
SUITE_OF: Mapping[str, str] = {
    "variation_shift": "variation_shift",
    "paired_variation": "paired_variation",
}


def check_suite(family: str, suite: str, where: str) -> None:
    """A protocol's ``statistics.suite`` must be its family's (:data:`SUITE_OF`), one line."""
    want = SUITE_OF.get(family)
    if want is not None and suite != want:
        raise StylisticBiasError(
            f"{where}: family {family}: statistics.suite is {suite!r}; a "
            f"{family} protocol's suite is {want} (`statistics: {{suite: {want}, ...}}`)"
        )


# ---- the seam: what a family does at every stage ------------------------------------------

#: Every hook a family declares (a ``module:attr`` reference) or declares it lacks (why), and
#: its call. The stage modules ask :func:`family_of` once per stage and call the hook.
HOOKS: dict[str, str] = {
    "judge": "(model_name, config, benchmark, out_dir) -> the judge stage's output folder",
    "requests": "(config, benchmark, model_cfg) -> (engine, the API requests judging needs)",
    "scenario": "(benchmark, id) -> the judged question `judge.scenarios` names by id",
    "scores": "(model_name, config, benchmark, source, ahead) -> the scores written",
    "analyze": "(config, benchmark, settings, models) -> StreamStats",
    "calibrate": "(config, synthetic) -> the calibration report (a JSON mapping)",
    "report": "(config, benchmark, root) -> None: figures + reports/README.md",
    "track": "(config, root, benchmark, report_digest, run_log) -> None: MLflow runs",
    "audit": "(config, root) -> each judged model's headline findings (report.audit_findings)",
}

#: the package of the families (``families/<name>/__init__.py`` defines ``FAMILY``)
PACKAGE = "stylisticbias.families"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Family:
    """One protocol family: its hooks (``stage -> "module:attr"``, imported on first use) and
    the hooks it lacks (``stage -> why``). Together they name every stage of :data:`HOOKS`
    once; a lacking hook, when its stage runs, says why in one log line and does nothing."""

    name: str
    hooks: Mapping[str, str]
    lacks: Mapping[str, str] = field(default_factory=dict)
    #: the family's paradigms (``paradigm:`` of a protocol file -> ``"module:attr"``, imported
    #: on first use): what differs between its protocols (REFLECT vs VIGNETTE), a module each;
    #: the first is the default of a file that declares none
    paradigms: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        both = set(self.hooks) & set(self.lacks)
        missing = [h for h in HOOKS if h not in self.hooks and h not in self.lacks]
        unknown = sorted((set(self.hooks) | set(self.lacks)) - set(HOOKS))
        if both or missing or unknown:
            raise StylisticBiasError(
                f"family {self.name}: hooks declared twice {sorted(both)}, missing {missing}, "
                f"unknown {unknown}; valid: {', '.join(HOOKS)}"
            )
        object.__setattr__(self, "_registry", Registry(f"{self.name} hook", dict(self.hooks)))
        object.__setattr__(
            self, "_paradigms", Registry(f"{self.name} paradigm", dict(self.paradigms))
        )

    def hook(self, stage: str) -> Callable[..., Any]:
        """The function of ``stage`` (imported now); a lacking one logs why and returns None."""
        if stage in self.lacks:
            return functools.partial(_lacking, self.name, stage, self.lacks[stage])
        registry: Registry[Callable[..., Any]] = self._registry  # type: ignore[attr-defined]
        return registry.lookup(stage, f"family {self.name}")

    def check_paradigm(self, value: object, where: str) -> str:
        """``paradigm:`` of a protocol file of this family, checked: a family with paradigms
        defaults to its first (with a warning) when the file declares none; an unknown one (or
        any, for a family without paradigms) fails in one line naming the valid ones."""
        if value is None and self.paradigms:
            first = next(iter(self.paradigms))
            log.warning(
                "%s: no `paradigm:`; using %s (add `paradigm: %s`; valid: %s)",
                where,
                first,
                first,
                ", ".join(self.paradigms),
            )
            return first
        if value is None:
            return ""
        registry: Registry[Any] = self._paradigms  # type: ignore[attr-defined]
        if value not in registry:
            raise registry.unknown(value, f"{where}: paradigm")
        return str(value)

    def paradigm(self, name: str) -> Any:
        """The paradigm ``name`` of this family (its module imported now)."""
        registry: Registry[Any] = self._paradigms  # type: ignore[attr-defined]
        return registry.lookup(name, f"family {self.name}")


def _lacking(family: str, stage: str, why: str, *_: Any, **__: Any) -> None:
    log.warning("%s: family %s has no %s stage: %s", stage, family, stage, why)


#: family name -> its package's ``FAMILY`` (imported on first use)
FAMILIES: Registry[Family] = Registry(
    "family", {name: f"{PACKAGE}.{name}:FAMILY" for name in FAMILY_NAMES}
)


def family_of(benchmark: Benchmark) -> Family:
    """The family a protocol declares (``family:``), its package imported now."""
    return FAMILIES.lookup(benchmark.family, benchmark.source or benchmark.name)
