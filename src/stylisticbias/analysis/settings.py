"""The ``analysis`` config section as a typed, frozen object (``conf/analysis/default.yaml``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from stylisticbias.config import ROOT, load_yaml_file
from stylisticbias.errors import StylisticBiasError

CORRECTIONS = ("fdr_bh", "bonferroni", "holm", "none")
ZERO_METHODS = ("wilcox", "pratt", "zsplit")
#: ``analysis.definitions``: ``paper`` (the paper's text, our default) or ``official`` (the
#: choices of the paper's released code; docs/statistics.md, "Definitions").
DEFINITIONS = ("paper", "official")
#: Faces a cell needs to be tested under ``official``: the released
#: ``check_significance_independent.py``, which makes the significance of Table 12 and Table 3,
#: tests from 3 faces (``compute_section_tables.py``'s helper, which makes the age-gradient,
#: tattoo and body tables -- Tables 4-6 -- tests from 5: ``analysis.official``; docs/statistics.md).
OFFICIAL_MIN_FACES = 3


def _shipped() -> dict[str, Any]:
    """``conf/analysis/default.yaml`` of this checkout, flat (``bootstrap`` and ``tables``
    lifted): the one place the defaults are written."""
    cfg = dict(load_yaml_file(ROOT / "conf" / "analysis" / "default.yaml") or {})
    flat = {k: v for k, v in cfg.items() if k not in ("bootstrap", "tables")}
    flat.update(cfg.get("bootstrap") or {})
    flat.update(cfg.get("tables") or {})
    return flat


_D = _shipped()


@dataclass(frozen=True)
class AnalysisSettings:
    """Every knob of the analysis; docs/statistics.md explains each. The defaults are those of
    ``conf/analysis/default.yaml`` (read once, not repeated here)."""

    definitions: str = _D["definitions"]
    alpha: float = _D["alpha"]
    strong_alpha: float = _D["strong_alpha"]
    correction: str = _D["correction"]
    vs_ddof: int = _D["vs_ddof"]
    cohens_d_ddof: int = _D["cohens_d_ddof"]
    variance_ddof: int = _D["variance_ddof"]
    min_faces: int = _D["min_faces"]
    zero_tol: float = _D["zero_tol"]
    wilcoxon_zero_method: str = _D["wilcoxon_zero_method"]
    wilcoxon_correction: bool = _D["wilcoxon_correction"]
    n_permutations: int = _D["n_permutations"]
    n_resamples: int = _D["n_resamples"]
    ci: float = _D["ci"]
    seed: int = _D["seed"]
    large_shift: float = _D["large_shift"]
    pareto_share: float = _D["pareto_share"]
    disagreement_quantile: float = _D["disagreement_quantile"]
    workers: int = _D["workers"]  # models summarised at once (no effect on numbers)
    fashion_category: str = _D["fashion_category"]
    tattoo_category: str = _D["tattoo_category"]
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
            # the face-level t-interval of each SBS; official: the face bootstrap's percentile
            "face_t_ci": not self.official,
        }

    @property
    def official(self) -> bool:
        """True under ``definitions: official`` (the paper's released code's choices)."""
        return self.definitions == "official"

    def resolved(self) -> AnalysisSettings:
        """The settings with ``definitions: official`` applied (``paper``: unchanged).

        ``official`` sets VS's ``ddof`` to 1 and ``min_faces`` to :data:`OFFICIAL_MIN_FACES`
        (``check_significance_independent.py`` tests a cell from 3 faces); the other official
        choices (the BH family of every cell, untested and empty ones as p = 1; Table 3 from
        pooled face means; the released scenario categories and agreement inputs) are read from
        :attr:`official` where they apply.
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
