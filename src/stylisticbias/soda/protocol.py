"""The SODA protocol (``conf/benchmark/soda.yaml``): objects, groups, prompt templates."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stylisticbias.config import conf_dir, load_yaml_file
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import FAMILY_NAMES, check_family

log = logging.getLogger(__name__)

BASE = "base"
_KEYS = {"family", "objects", "base_template", "dimensions", "fixed_attributes", "mitigation"}


@dataclass(frozen=True)
class Condition:
    """One prompt condition: the base prompt, or a group of a dimension (optionally mitigated)."""

    dimension: str  # "base" for the base prompt
    group: str  # "base" for the base prompt
    variant: str = "original"  # or a mitigation key

    @property
    def id(self) -> str:
        """``base``, ``gender=women``, ``gender=women+anti_stereotype``."""
        if self.dimension == BASE:
            return BASE
        tail = "" if self.variant == "original" else f"+{self.variant}"
        return f"{self.dimension}={self.group}{tail}"


@dataclass(frozen=True)
class SodaProtocol:
    """Objects x (base + demographic groups) prompt templates, and the mitigation suffixes."""

    objects: tuple[str, ...]
    base_template: str
    dimensions: Mapping[str, tuple[str, ...]]
    templates: Mapping[str, str]
    #: attribute -> the options it is asked with (beside any values discovery names); asked
    #: of every image whatever the discovery found (SODA's fixed attributes)
    fixed_attributes: Mapping[str, tuple[str, ...]]
    mitigation: Mapping[str, str]
    source: str = ""

    def conditions(self, mitigation: str | None = None) -> list[Condition]:
        """The base condition, every group, and (with ``mitigation``) every group mitigated."""
        out = [Condition(BASE, BASE)]
        for dim, groups in self.dimensions.items():
            out += [Condition(dim, g) for g in groups]
        if mitigation is not None:
            if mitigation not in self.mitigation:
                raise StylisticBiasError(
                    f"{self.source}: mitigation {mitigation!r}; valid: {', '.join(self.mitigation)}"
                )
            for dim, groups in self.dimensions.items():
                out += [Condition(dim, g, mitigation) for g in groups]
        return out

    def prompt(self, obj: str, cond: Condition) -> str:
        """The prompt of ``obj`` under ``cond`` (a mitigation suffix goes before the constraint)."""
        if cond.dimension == BASE:
            return self.base_template.format(object=obj)
        text = self.templates[cond.dimension].format(object=obj, group=cond.group)
        if cond.variant != "original":
            head, sep, tail = text.partition(", one product only")
            text = f"{head} {self.mitigation[cond.variant]}{sep}{tail}"
        return text


def load_soda(name: str = "soda") -> SodaProtocol:
    """Read ``conf/benchmark/<name>.yaml`` (a SODA protocol); one error line on a bad file."""
    path = Path(name) if name.endswith(".yaml") else conf_dir() / "benchmark" / f"{name}.yaml"
    where = f"conf/benchmark/{path.name}"
    if not path.exists():
        raise StylisticBiasError(f"{where}: not found (a SODA protocol file)")
    cfg: Any = load_yaml_file(path)  # one line on bad bytes or bad YAML
    if not isinstance(cfg, dict):
        raise StylisticBiasError(f"{where}: expected a mapping of protocol keys")
    if "family" not in cfg and cfg.get("kind") == "soda":  # an older file: `kind: soda`
        log.warning("%s: `kind: soda` is now `family: soda`; inferred family soda", where)
        cfg = {"family": "soda", **{k: v for k, v in cfg.items() if k != "kind"}}
    if "family" not in cfg:
        raise StylisticBiasError(
            f"{where}: family: missing; a SODA protocol says `family: soda`; valid: "
            f"{', '.join(FAMILY_NAMES)}"
        )
    if check_family(cfg["family"], where) != "soda":
        raise StylisticBiasError(
            f"{where}: family {cfg['family']}: not a SODA protocol (needs `family: soda`)"
        )
    unknown = set(cfg) - _KEYS
    missing = _KEYS - set(cfg)
    if unknown or missing:
        raise StylisticBiasError(
            f"{where}: unknown key(s) {sorted(unknown)}, missing {sorted(missing)}; "
            f"valid: {', '.join(sorted(_KEYS))}"
        )
    dims: dict[str, tuple[str, ...]] = {}
    templates: dict[str, str] = {}
    for dim, d in cfg["dimensions"].items():
        if set(d) != {"groups", "template"} or len(d["groups"]) < 2:
            raise StylisticBiasError(
                f"{where}: dimensions.{dim} needs `groups` (>= 2) and `template`"
            )
        dims[str(dim)] = tuple(str(g) for g in d["groups"])
        templates[str(dim)] = str(d["template"])
    fixed = cfg["fixed_attributes"]
    if not isinstance(fixed, dict) or any(
        not isinstance(v, list) or len(v) < 2 for v in fixed.values()
    ):
        raise StylisticBiasError(
            f"{where}: fixed_attributes must map each attribute to its options (a list of >= 2 "
            "values), e.g. `text_presence: [no_text, logo_symbol, brand_text]`"
        )
    return SodaProtocol(
        objects=tuple(str(o) for o in cfg["objects"]),
        base_template=str(cfg["base_template"]),
        dimensions=dims,
        templates=templates,
        fixed_attributes={str(a): tuple(str(v) for v in vals) for a, vals in fixed.items()},
        mitigation={str(k): str(v) for k, v in cfg["mitigation"].items()},
        source=where,
    )
