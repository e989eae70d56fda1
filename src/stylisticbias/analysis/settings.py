"""The ``analysis`` config section as a typed, frozen object (``conf/analysis/default.yaml``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from stylisticbias.errors import StylisticBiasError

CORRECTIONS = ("fdr_bh", "bonferroni", "holm", "none")
ZERO_METHODS = ("wilcox", "pratt", "zsplit")
#: ``analysis.definitions``: ``paper`` (the paper's text, our default) or ``official`` (the
#: choices of the paper's released code; docs/statistics.md, "Definitions").
DEFINITIONS = ("paper", "official")
#: A cell the released code's Wilcoxon helper skips (p = 1) below this many faces.
OFFICIAL_MIN_FACES = 5


@dataclass(frozen=True)
class AnalysisSettings:
    """Every knob of the analysis; docs/statistics.md explains each."""

    definitions: str = "paper"
    alpha: float = 0.05
    strong_alpha: float = 0.001
    correction: str = "fdr_bh"
    vs_ddof: int = 0
    cohens_d_ddof: int = 1
    variance_ddof: int = 1
    min_faces: int = 2
    zero_tol: float = 1e-9
    wilcoxon_zero_method: str = "wilcox"
    wilcoxon_correction: bool = False
    n_permutations: int = 2000
    n_resamples: int = 1000
    ci: float = 0.95
    seed: int = 0
    large_shift: float = 0.25
    pareto_share: float = 0.8
    disagreement_quantile: float = 0.75
    workers: int = 2  # models summarised at once by the streaming analysis (no effect on numbers)
    fashion_category: str = "Fashion"
    tattoo_category: str = "Tattoos"
    group_abbrev: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = "params.yaml analysis"
        if self.definitions not in DEFINITIONS:
            raise StylisticBiasError(
                f"{where}.definitions: {self.definitions!r}; valid: {', '.join(DEFINITIONS)}"
            )
        if self.correction not in CORRECTIONS:
            raise StylisticBiasError(
                f"{where}.correction: {self.correction!r}; valid: {', '.join(CORRECTIONS)}"
            )
        if self.wilcoxon_zero_method not in ZERO_METHODS:
            raise StylisticBiasError(
                f"{where}.wilcoxon_zero_method: {self.wilcoxon_zero_method!r}; valid: "
                + ", ".join(ZERO_METHODS)
            )
        for name in ("vs_ddof", "cohens_d_ddof", "variance_ddof"):
            if getattr(self, name) not in (0, 1):
                raise StylisticBiasError(f"{where}.{name}: {getattr(self, name)!r}; valid: 0, 1")
        for name in ("alpha", "strong_alpha", "ci", "pareto_share", "disagreement_quantile"):
            v = getattr(self, name)
            if not 0.0 < float(v) < 1.0:
                raise StylisticBiasError(f"{where}.{name}: {v!r} must lie in (0, 1)")
        if self.workers < 1:
            raise StylisticBiasError(f"{where}.workers: {self.workers!r} must be >= 1")
        if self.min_faces < 1 or self.n_resamples < 1 or self.n_permutations < 1:
            raise StylisticBiasError(
                f"{where}: min_faces, bootstrap.n_resamples, n_permutations must be >= 1"
            )

    def sbs_kwargs(self) -> dict[str, Any]:
        """Keyword arguments every SBS estimate shares (``metrics.sbs`` / ``sbs_frame``)."""
        extra: dict[str, Any] = {"scipy_method": True} if self.official else {}
        return {
            **extra,
            "n_resamples": self.n_resamples,
            "ci": self.ci,
            "seed": self.seed,
            "method": self.correction,
            "min_faces": self.min_faces,
            "zero_method": self.wilcoxon_zero_method,
            "correction": self.wilcoxon_correction,
        }

    @property
    def official(self) -> bool:
        """True under ``definitions: official`` (the paper's released code's choices)."""
        return self.definitions == "official"

    def resolved(self) -> AnalysisSettings:
        """The settings with ``definitions: official`` applied (``paper``: unchanged).

        ``official`` sets VS's ``ddof`` to 1 and ``min_faces`` to 5 (its Wilcoxon helper returns
        p = 1 below five faces); the other official choices (untested cells entered as p = 1 in
        BH, Table 3 from pooled face means) are read from :attr:`official` where they apply.
        """
        if not self.official:
            return self
        return replace(self, vs_ddof=1, min_faces=OFFICIAL_MIN_FACES)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None) -> AnalysisSettings:
        """Build from the ``analysis`` section; unknown keys are an error naming the valid ones."""
        cfg = dict(cfg or {})
        boot = dict(cfg.pop("bootstrap", {}) or {})
        tables = dict(cfg.pop("tables", {}) or {})
        flat: dict[str, Any] = {**cfg}
        flat.update(boot)
        flat.update(tables)
        valid = {f.name for f in fields(cls)}
        bad = sorted(set(flat) - valid)
        if bad:
            raise StylisticBiasError(
                f"params.yaml analysis: unknown key(s) {', '.join(bad)}; valid: "
                + ", ".join(sorted(valid | {"bootstrap", "tables"}))
            )
        if "group_abbrev" in flat:
            flat["group_abbrev"] = {str(k): str(v) for k, v in flat["group_abbrev"].items()}
        return cls(**flat).resolved()
