"""The whole composed configuration (``conf/config.yaml`` -> ``params.yaml``) as one typed spec."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.annotate import AnnotateSpec
from stylisticbias.spec.generators import (
    DiffusersSpec,
    GeminiSpec,
    ImportSpec,
    ProceduralSpec,
)
from stylisticbias.spec.qa import QASpec
from stylisticbias.spec.sections import (
    AnalysisSpec,
    FacesSpec,
    GallerySpec,
    GenerationSpec,
    JudgeSpec,
    PathsSpec,
    ReleaseSpec,
    SweepSpec,
    TrackingSpec,
    VariationsSpec,
)
from stylisticbias.spec.soda import SodaSpec

#: generator ``_target_`` -> its spec (another class: a plug-in generator, checked by itself)
GENERATOR_TARGETS: dict[str, type] = {
    "stylisticbias.generators.procedural.ProceduralGenerator": ProceduralSpec,
    "stylisticbias.generators.diffusers_backend.DiffusersGenerator": DiffusersSpec,
    "stylisticbias.generators.gemini_backend.GeminiGenerator": GeminiSpec,
    "stylisticbias.dataset.importer.ImportSettings": ImportSpec,
}


@dataclass(frozen=True)
class ProtocolSpec:
    """One protocol an experiment runs (``conf/protocols/<name>.yaml``, chosen with
    ``protocols=[...]``): what the audit's bias card says of it. Its settings for the
    experiment are ``protocol_settings.<name>``; its protocol file is
    ``conf/benchmark/<name>.yaml``."""

    title: str = MISSING
    paper: str = MISSING
    measures: str = MISSING


@dataclass(frozen=True)
class Config:
    """Every section of ``params.yaml``, typed. ``models`` maps each judged model's name to its
    spec (its kind follows its engine); ``generator`` is the chosen generator's spec;
    ``protocol`` names the benchmark protocol of one job (``conf/benchmark/<protocol>.yaml``);
    ``protocols``/``generator_protocols`` every protocol the experiment runs, each as a job of
    its own (:mod:`stylisticbias.protocols`)."""

    seed: int = MISSING
    paths: PathsSpec = field(default_factory=PathsSpec)
    faces: FacesSpec = field(default_factory=FacesSpec)
    generation: GenerationSpec = field(default_factory=GenerationSpec)
    gallery: GallerySpec = field(default_factory=GallerySpec)
    variations: VariationsSpec = field(default_factory=VariationsSpec)
    judge: JudgeSpec = field(default_factory=JudgeSpec)
    protocol: str = MISSING
    #: the judged-model protocols the experiment runs (stylisticbias.protocols), in order
    protocols: dict[str, Any] = field(default_factory=dict)  # each a ProtocolSpec
    #: the protocols that audit an image generator instead (SODA): their own stages
    generator_protocols: dict[str, Any] = field(default_factory=dict)  # each a ProtocolSpec
    #: per protocol, the settings its job runs with on top of this configuration
    protocol_settings: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    judged_models: list[str] = field(default_factory=list)  # derived in conf/: list(models)
    generator: Any = MISSING
    analysis: AnalysisSpec = field(default_factory=AnalysisSpec)
    tracking: TrackingSpec = field(default_factory=TrackingSpec)
    qa: QASpec = field(default_factory=QASpec)
    annotate: AnnotateSpec = field(default_factory=AnnotateSpec)
    annotators: dict[str, Any] = field(default_factory=dict)  # annotators.<name>: typed by engine
    soda: SodaSpec = field(default_factory=SodaSpec)
    release: ReleaseSpec = field(default_factory=ReleaseSpec)
    sweep: SweepSpec | None = None  # only in a sweep's composition (conf/sweep.yaml)

    @property
    def model_names(self) -> list[str]:
        """The judged models, in configuration order."""
        return list(self.models)

    def model(self, name: str) -> Any:
        """One judged model's spec; an unknown name is one error line listing the judged ones."""
        if name not in self.models:
            raise StylisticBiasError(
                f"model {name!r} is not judged in this configuration; judged: "
                f"{', '.join(self.models) or '(none)'} (params.yaml models; choose with "
                "`model=[...]` or an experiment)"
            )
        return self.models[name]
