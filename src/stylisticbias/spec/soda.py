"""Spec of the ``soda`` section: the SODA audit of an image generator (``stylisticbias.soda``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from stylisticbias.spec.checks import at_least, choice, finite_in

#: soda.generator: the offline stand-in, or the configured ``generator:`` (text to image)
SODA_GENERATORS = ("standin", "configured")
#: soda.definitions: the paper's equations (default) or the released analysis scripts' arithmetic
SODA_DEFINITIONS = ("paper", "official")


@dataclass(frozen=True)
class SodaSpec:
    """Which objects, how many images per prompt, the annotator, the tests' settings.

    ``objects: []`` switches the audit off (the stage writes empty tables). ``generator``:
    ``standin`` (the offline stand-in drawing ``planted``, the attribute distributions it is
    tested against) or ``configured`` (the ``generator:`` section's text-to-image model, asked
    each SODA prompt verbatim); ``annotator`` an ``annotators.<name>``. ``definitions``:
    ``paper`` (Eqs. 1-3 with ``js_base``/``js_distance``) or ``official`` (the released scripts'
    arithmetic: natural-log JS distance with its 1e-10 floor for BDS, CDS pooled over objects,
    the released VAC aggregate; ``js_base``/``js_distance`` are then not used; docs/soda.md).
    """

    protocol: str = MISSING
    objects: list[str] = field(default_factory=list)
    images_per_prompt: int = MISSING
    discovery_per_condition: int = MISSING
    generator: str = MISSING
    planted: str = MISSING
    annotator: str = MISSING
    mitigation: str | None = None
    n_perm: int = MISSING
    alpha: float = MISSING
    js_base: float = MISSING
    js_distance: bool = MISSING
    definitions: str = "paper"
    seed: int = MISSING
    image_size: int = MISSING

    def __post_init__(self) -> None:
        if self.generator != MISSING:
            choice("soda.generator", self.generator, SODA_GENERATORS)
        choice("soda.definitions", self.definitions, SODA_DEFINITIONS)
        for key in ("images_per_prompt", "n_perm"):
            if getattr(self, key) != MISSING:
                at_least(f"soda.{key}", getattr(self, key), 2)
        if self.discovery_per_condition != MISSING:
            at_least("soda.discovery_per_condition", self.discovery_per_condition, 1)
        if self.alpha != MISSING:
            finite_in("soda.alpha", float(self.alpha), 0.0, 0.5)
        if self.js_base != MISSING:
            finite_in("soda.js_base", float(self.js_base), 1.0, 1e9, " (2 or e)")
        if self.image_size != MISSING:
            at_least("soda.image_size", self.image_size, 16)
