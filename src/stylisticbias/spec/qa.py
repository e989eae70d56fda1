"""Specs of the ``qa`` section (quality checks of the edits) of ``conf/config.yaml``."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from stylisticbias.spec.checks import at_least, choice, finite_in

#: qa.policy: report only, or exclude failing images from judging (recorded, never silent)
QA_POLICIES = ("report", "exclude")


@dataclass(frozen=True)
class LocalitySpec:
    """When an edit counts as local (``stylisticbias.qa.locality``); changes are in [0, 1]."""

    pixel_tol: float = MISSING
    max_outside: float = MISSING
    max_changed_outside: float = MISSING

    def __post_init__(self) -> None:
        for key in ("pixel_tol", "max_outside", "max_changed_outside"):
            value = getattr(self, key)
            if value != MISSING:
                finite_in(f"qa.locality.{key}", float(value), -1e-12, 1.0, " (0 allowed)")


@dataclass(frozen=True)
class AuditSpec:
    """The generator audit: permutation shuffles per test and the BH level."""

    n_perm: int = MISSING
    alpha: float = MISSING

    def __post_init__(self) -> None:
        if self.n_perm != MISSING:
            at_least("qa.audit.n_perm", self.n_perm, 2)
        if self.alpha != MISSING:
            finite_in("qa.audit.alpha", float(self.alpha), 0.0, 0.5)


@dataclass(frozen=True)
class QASpec:
    """The QA policy, the locality thresholds and the annotator that checks the edits.

    ``annotator``: the name of an annotator (``annotators.<name>``) whose attribute and identity
    answers enter the QA table, or null (locality only). ``workers``: processes measuring the
    edits (locality, generator audit), one face at a time each; the tables do not depend on it.
    """

    policy: str = MISSING
    annotator: str | None = None
    min_confidence: float = MISSING
    locality: LocalitySpec = field(default_factory=LocalitySpec)
    audit: AuditSpec = field(default_factory=AuditSpec)
    workers: int = 1

    def __post_init__(self) -> None:
        at_least("qa.workers", self.workers, 1)
        if self.policy != MISSING:
            choice("qa.policy", self.policy, QA_POLICIES)
        if self.min_confidence != MISSING:
            finite_in("qa.min_confidence", float(self.min_confidence), -1e-12, 1.0, " (0 allowed)")
