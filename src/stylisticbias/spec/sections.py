"""Specs of the pipeline-wide sections of ``conf/config.yaml``: paths, faces, judge, tracking...

Every field is required (``MISSING``): its one default lives in ``conf/`` (YAML), its type
and its allowed range here. Hydra merges ``conf/`` into these classes, so an unknown key or a
wrong type fails composition; ``__post_init__`` checks ranges when the config is converted to
objects (at compose time and when a stage loads ``params.yaml``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.checks import at_least, choice, finite_in, unique_ints

#: identity samplers (stylisticbias.sampling)
SAMPLERS = ("paper_marginals", "uniform", "paper_nested")
#: judge.images
IMAGE_SETS = ("evaluated", "all")
#: judge.parser
PARSERS = ("paper", "official")
#: variations.scope
SCOPES = ("full", "evaluated")
#: release.materialize
RELEASE_MATERIALIZE = ("hardlink", "copy")


@dataclass(frozen=True)
class PathsSpec:
    """Where each stage writes; every output lies strictly inside ``data`` (docs/reliability.md)."""

    data: str = MISSING
    faces: str = MISSING
    variations: str = MISSING
    judgments: str = MISSING
    scores: str = MISSING
    analysis_cache: str | None = MISSING  # null: no per-model summary cache
    reports: str = MISSING
    qa: str = MISSING  # the locality and QA tables (stylisticbias.qa)
    annotations: str = MISSING  # one directory per annotator (stylisticbias.annotate)
    soda: str = MISSING  # the SODA audit: images, annotations, tables (stylisticbias.soda)
    audit: str = MISSING  # every protocol's findings per model: bias cards, leaderboard


@dataclass(frozen=True)
class FacesSpec:
    """How many base identities, sampled how (``stylisticbias.sampling``)."""

    n: int = MISSING
    sampler: str = MISSING
    seed: int = MISSING

    def __post_init__(self) -> None:
        if isinstance(self.n, int) and not isinstance(self.n, bool) and self.n < 1:
            raise StylisticBiasError(f"faces.n={self.n!r}: must be an integer >= 1")
        if self.sampler != MISSING:
            choice("faces.sampler", self.sampler, SAMPLERS)


@dataclass(frozen=True)
class GenerationSpec:
    """Generator-independent rendering options."""

    retry_failed: bool = MISSING


@dataclass(frozen=True)
class GallerySpec:
    """The variations gallery (data/variations/gallery.html)."""

    max_faces: int | None = MISSING

    def __post_init__(self) -> None:
        if isinstance(self.max_faces, int) and self.max_faces < 1:
            raise StylisticBiasError(f"gallery.max_faces={self.max_faces!r}: must be >= 1 or null")


@dataclass(frozen=True)
class VariationsSpec:
    """Which single-attribute edits are rendered."""

    scope: str = MISSING

    def __post_init__(self) -> None:
        if self.scope != MISSING:
            choice("variations.scope", self.scope, SCOPES)


@dataclass(frozen=True)
class JudgeSpec:
    """The judging protocol every model shares (App. C.2): images, orderings, seeds, decoding."""

    images: str = MISSING
    scenarios: Any = MISSING  # "all" or a list of scenario ids
    orderings: Any = MISSING  # "all" or a list of the protocol's ordering ids
    seeds: list[int] = MISSING
    temperature: float = MISSING
    max_new_tokens: int = MISSING
    undecided_warn: float = MISSING
    undecided_max: float = MISSING
    parser: str = MISSING
    dry_run: bool = MISSING

    def __post_init__(self) -> None:
        if self.images != MISSING:
            choice("judge.images", self.images, IMAGE_SETS)
        if self.parser != MISSING:
            choice("judge.parser", self.parser, PARSERS)
        if isinstance(self.orderings, list):
            unique_ints("judge.orderings", self.orderings, minimum=1)
        elif self.orderings not in (MISSING, "all"):
            raise StylisticBiasError(
                f"judge.orderings={self.orderings!r}; valid: all or a list of ordering ids"
            )
        if isinstance(self.seeds, list):
            if self.seeds and min(self.seeds) < 1:
                raise StylisticBiasError(
                    f"judge.seeds={list(self.seeds)}: seeds must be >= 1 "
                    "(seed 0 marks exact-distribution rows)"
                )
            unique_ints("judge.seeds", self.seeds, minimum=1)
        if isinstance(self.temperature, float):
            finite_in("judge.temperature", self.temperature, 0.0, 5.0, " (the paper uses 0.2)")
        if isinstance(self.max_new_tokens, int):
            at_least("judge.max_new_tokens", self.max_new_tokens, 1, " (the paper uses 16)")
        for key in ("undecided_warn", "undecided_max"):
            v = getattr(self, key)
            if isinstance(v, float) and not 0.0 <= v <= 1.0:
                raise StylisticBiasError(f"judge.{key}={v!r}: must lie in [0, 1]")
        warn, limit = self.undecided_warn, self.undecided_max
        if isinstance(warn, float) and isinstance(limit, float) and warn > limit:
            raise StylisticBiasError(  # else the scores stage fails, after the judge re-ran
                f"judge.undecided_warn={warn!r} > judge.undecided_max={limit!r}: need "
                "undecided_warn <= undecided_max"
            )
        scen = self.scenarios
        if (
            scen != MISSING
            and scen not in (None, "all")
            and not (isinstance(scen, list | tuple) and scen)
        ):
            raise StylisticBiasError(
                f"judge.scenarios={scen!r}; valid: all or a non-empty list of scenario ids"
            )


@dataclass(frozen=True)
class TrackingSpec:
    """MLflow: where runs go and how long a contact with the store may take."""

    enabled: bool = MISSING
    tracking_uri: str | None = MISSING
    experiment_name: str = MISSING
    max_retries: int = MISSING
    timeout_s: int = MISSING

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, int):
            at_least("tracking.max_retries", self.max_retries, 0)
        if isinstance(self.timeout_s, int):
            at_least("tracking.timeout_s", self.timeout_s, 1)


@dataclass(frozen=True)
class ReleaseSpec:
    """The publishable dataset folder (``python -m stylisticbias.release``; docs/release.md).

    ``license`` is the licence of a *generated* set, chosen by whoever publishes it (an SPDX id
    or a URL); an imported set's licence is ``generator.license`` and is never guessed.
    """

    out: str = MISSING
    name: str = MISSING
    license: str | None = MISSING
    materialize: str = MISSING
    judgments: bool = MISSING
    url: str | None = MISSING
    date_published: str | None = MISSING
    citation: str = MISSING

    def __post_init__(self) -> None:
        if self.materialize != MISSING:
            choice("release.materialize", self.materialize, RELEASE_MATERIALIZE)
        if isinstance(self.name, str) and self.name != MISSING and not self.name.strip():
            raise StylisticBiasError("release.name is empty: name the dataset")
        d = self.date_published
        if isinstance(d, str) and d != MISSING and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", d):
            raise StylisticBiasError(f"release.date_published={d!r}: expected YYYY-MM-DD or null")


@dataclass(frozen=True)
class BootstrapSpec:
    """Face-level bootstrap of every interval."""

    n_resamples: int = MISSING
    ci: float = MISSING
    seed: int = MISSING


@dataclass(frozen=True)
class AnalysisTablesSpec:
    """Which categories Tables 4-6 single out."""

    fashion_category: str = MISSING
    tattoo_category: str = MISSING


@dataclass(frozen=True)
class AnalysisSpec:
    """The ``analysis`` section as written in conf/analysis/*.yaml (docs/statistics.md).

    Its ranges are checked by :class:`stylisticbias.analysis.settings.AnalysisSettings`, the
    flat view the analysis code uses (``AnalysisSettings.from_config``).
    """

    definitions: str = MISSING
    alpha: float = MISSING
    strong_alpha: float = MISSING
    correction: str = MISSING
    vs_ddof: int = MISSING
    cohens_d_ddof: int = MISSING
    variance_ddof: int = MISSING
    min_faces: int = MISSING
    zero_tol: float = MISSING
    wilcoxon_zero_method: str = MISSING
    wilcoxon_correction: bool = MISSING
    n_permutations: int = MISSING
    bootstrap: BootstrapSpec = field(default_factory=BootstrapSpec)
    large_shift: float = MISSING
    pareto_share: float = MISSING
    disagreement_quantile: float = MISSING
    workers: int = MISSING
    tables: AnalysisTablesSpec = field(default_factory=AnalysisTablesSpec)
    group_abbrev: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SweepSpec:
    """Settings of a ``python -m stylisticbias.sweep`` multirun (conf/sweep.yaml; docs/sweeps.md).

    Absent (null) from a plain composition: ``conf/config.yaml`` sets nothing here.
    """

    datasets: str | None = None  # shared dataset builds; null: <sweep dir>/datasets
