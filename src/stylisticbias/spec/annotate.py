"""Specs of the annotation stage: the ``annotate`` section and each ``annotators.<name>``.

An annotator is a model asked structured questions about images (``stylisticbias.annotate``);
``conf/annotator/<name>.yaml`` (``# @package annotators.<name>``) holds one, typed here by its
engine: ``simulated`` (planted answers and failure rates, offline), ``openai`` (any
OpenAI-compatible chat-completions endpoint, the same ``endpoint:`` section as a judged model) or
``hf`` (a transformers checkpoint, loaded as the ``hf`` judge engine loads one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from stylisticbias.errors import StylisticBiasError
from stylisticbias.registry import Registry
from stylisticbias.spec.checks import at_least, choice, finite_in

#: annotator engines
ANNOTATOR_ENGINES = ("simulated", "openai", "hf")
#: annotate.questions: the QA checks an annotator is asked about each edit
QA_QUESTIONS = ("attribute", "identity", "attribute_value")


def _rate(key: str, value: Any) -> None:
    if value != MISSING:
        finite_in(key, float(value), -1e-12, 1.0, " (a share in [0, 1])")


@dataclass(frozen=True)
class AnnotateSpec:
    """What is annotated: the QA questions asked of each edit, and images per batch (shard)."""

    questions: list[str] = MISSING
    batch_size: int = MISSING

    def __post_init__(self) -> None:
        if self.questions != MISSING:
            if not self.questions:
                raise StylisticBiasError("annotate.questions=[]: list at least one question")
            for q in self.questions:
                choice("annotate.questions", q, QA_QUESTIONS)
        if self.batch_size != MISSING:
            at_least("annotate.batch_size", self.batch_size, 1)


@dataclass(frozen=True)
class SimulatedAnnotatorSpec:
    """A simulated annotator: truthful answers except planted failures and invalid replies.

    ``attribute_fail_rate`` / ``identity_fail_rate``: share of edits (chosen by a hash of the
    seed and image id) whose edit the annotator sees as failed; ``fail_by_value``: per
    ``"Attribute=Value"`` overrides of the attribute rate. ``malformed_rate``, ``outside_rate``,
    ``refusal_rate``: share of answers that are malformed JSON, outside the schema, refusals.
    ``confidence``: the probability it gives its own answer (the rest spread over the others).
    """

    name: str = MISSING
    display_name: str = MISSING
    seed: int = MISSING
    attribute_fail_rate: float = MISSING
    identity_fail_rate: float = MISSING
    fail_by_value: dict[str, float] = field(default_factory=dict)
    malformed_rate: float = MISSING
    outside_rate: float = MISSING
    refusal_rate: float = MISSING
    confidence: float = MISSING
    engine: str = "simulated"

    def __post_init__(self) -> None:
        choice(f"annotators.{self.name}.engine", self.engine, ("simulated",))
        for key in (
            "attribute_fail_rate",
            "identity_fail_rate",
            "malformed_rate",
            "outside_rate",
            "refusal_rate",
            "confidence",
        ):
            _rate(f"annotators.{self.name}.{key}", getattr(self, key))
        for key, rate in dict(self.fail_by_value).items():
            if "=" not in key:
                raise StylisticBiasError(
                    f"annotators.{self.name}.fail_by_value: key {key!r} must be 'Attribute=Value'"
                )
            _rate(f"annotators.{self.name}.fail_by_value.{key}", rate)


@dataclass(frozen=True)
class ExactAnnotationSpec:
    """The exact expansion of categorical and yes/no answers (``stylisticbias.annotate.exact``).

    ``temperature`` (> 0) of the distribution, ``max_new_tokens`` after the prefill
    ``{"answer": "``, ``prune_threshold`` and ``max_branches_per_suffix`` (their mass is
    undecided), ``top_logprobs`` per request (``openai`` only).
    """

    temperature: float = 1.0
    max_new_tokens: int = 12
    prune_threshold: float = 1e-4
    max_branches_per_suffix: int = 64
    top_logprobs: int = 20

    def __post_init__(self) -> None:
        at_least("exact_settings.max_new_tokens", self.max_new_tokens, 1)
        at_least("exact_settings.max_branches_per_suffix", self.max_branches_per_suffix, 1)
        at_least("exact_settings.top_logprobs", self.top_logprobs, 1)
        finite_in("exact_settings.prune_threshold", float(self.prune_threshold), 0.0, 1.0)


def _exact_temperature(name: str, exact: Any, settings: Any) -> None:
    if exact is True and isinstance(settings, ExactAnnotationSpec) and settings.temperature <= 0:
        raise StylisticBiasError(
            f"annotators.{name}.exact_settings.temperature={settings.temperature}: exact "
            "distributions need a temperature > 0"
        )


@dataclass(frozen=True)
class OpenAIAnnotatorSpec:
    """An annotator behind an OpenAI-compatible endpoint (image(s) + question -> JSON answer).

    ``endpoint`` and ``prices`` as in ``conf/model/*.yaml`` (checked by the openai engine's
    ``endpoint_spec``); ``transport`` overrides ``conf/engine/openai.yaml``'s; ``json_mode`` asks
    the server for ``response_format: json_object``.
    """

    name: str = MISSING
    display_name: str = MISSING
    endpoint: dict[str, Any] = MISSING
    prices: dict[str, Any] = field(default_factory=dict)
    transport: dict[str, Any] = field(default_factory=dict)
    cache: str = MISSING
    temperature: float = MISSING
    max_tokens: int = MISSING
    seed: int = MISSING
    json_mode: bool = MISSING
    exact: bool = False
    exact_settings: ExactAnnotationSpec = field(default_factory=ExactAnnotationSpec)
    engine: str = "openai"

    def __post_init__(self) -> None:
        choice(f"annotators.{self.name}.engine", self.engine, ("openai",))
        if self.max_tokens != MISSING:
            at_least(f"annotators.{self.name}.max_tokens", self.max_tokens, 1)
        if self.temperature != MISSING:
            at_least(f"annotators.{self.name}.temperature", self.temperature, 0)
        _exact_temperature(self.name, self.exact, self.exact_settings)


@dataclass(frozen=True)
class HFAnnotatorSpec:
    """An annotator on a transformers image-text-to-text checkpoint (the ``hf`` judge engine's
    loading, prompts and exact expansion).

    ``hub_id``/``revision``/``dtype``/``local_build``/``chat_template_kwargs`` as in
    ``conf/model/*.yaml``; ``device`` (``auto``: CUDA when present). Every question gets one
    seeded ``generate`` reply (``temperature``, ``max_tokens``; temperature 0: greedy); with
    ``exact``, categorical and yes/no questions get the exact answer distribution instead
    (``exact_settings``), their reply the most probable answer's.
    """

    name: str = MISSING
    display_name: str = MISSING
    hub_id: str = MISSING
    revision: str | None = None
    dtype: str = MISSING
    device: str = MISSING
    local_build: str | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    temperature: float = MISSING
    max_tokens: int = MISSING
    seed: int = MISSING
    exact: bool = MISSING
    exact_settings: ExactAnnotationSpec = field(default_factory=ExactAnnotationSpec)
    engine: str = "hf"

    def __post_init__(self) -> None:
        choice(f"annotators.{self.name}.engine", self.engine, ("hf",))
        if self.max_tokens != MISSING:
            at_least(f"annotators.{self.name}.max_tokens", self.max_tokens, 1)
        if self.temperature != MISSING:
            at_least(f"annotators.{self.name}.temperature", self.temperature, 0)
        _exact_temperature(self.name, self.exact, self.exact_settings)


#: annotator engine -> its spec
ANNOTATOR_SPECS: Registry[type] = Registry(
    "annotator engine",
    {"simulated": SimulatedAnnotatorSpec, "openai": OpenAIAnnotatorSpec, "hf": HFAnnotatorSpec},
)

AnnotatorSpec = SimulatedAnnotatorSpec | OpenAIAnnotatorSpec | HFAnnotatorSpec
