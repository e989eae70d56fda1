"""Specs of the judging engines (``conf/engine/*.yaml``), composed into each model's ``engine``.

A model file (``conf/model/*.yaml``) selects its engine in its defaults list
(``- /engine@engine: hf``) and may override any engine key under ``engine:``; the engine class
is the model's ``_target_``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from stylisticbias.errors import StylisticBiasError
from stylisticbias.registry import Registry
from stylisticbias.spec.checks import at_least, choice


@dataclass(frozen=True)
class LightningSpec:
    """``lightning.Trainer`` placement: one process per device, ``torchrun``/``srun`` for more."""

    accelerator: str = MISSING
    devices: Any = MISSING  # an int, "auto", or a list of device ids
    strategy: str = MISSING
    num_nodes: int = MISSING


@dataclass(frozen=True)
class SimulatedEngineSpec:
    """The simulated judge: planted effects, no pixels read (judge.engines.simulated)."""

    name: str = MISSING
    decoding: str = MISSING
    planted: str | None = None  # None: the protocol's own planted effects (or the default)
    image_batch_size: int = MISSING
    lightning: LightningSpec = field(default_factory=LightningSpec)
    #: auto: on one device of one node, judged in the stage's process (no Trainer); lightning:
    #: always through Lightning's Trainer, as engines with weights are (same records)
    runner: str = "auto"

    def __post_init__(self) -> None:
        if self.name != MISSING:
            choice("engine.name", self.name, ("simulated",))
        choice("engine.runner", self.runner, ("auto", "lightning"))
        if isinstance(self.image_batch_size, int):
            at_least("engine.image_batch_size", self.image_batch_size, 1)


@dataclass(frozen=True)
class HFEngineSpec:
    """The transformers engine (stylisticbias.judge.engines.hf.engine; docs/engines.md)."""

    name: str = MISSING
    decoding: str = MISSING
    seed_mode: str = MISSING
    prune_threshold: float = MISSING
    suffix_batch_size: Any = MISSING  # an int or "auto"
    branch_batch_size: Any = MISSING  # an int or "auto"
    suffix_padding: bool = MISSING
    max_branches_per_suffix: int = MISSING
    prefix_sharing: str = MISSING
    image_batch_size: int = MISSING
    num_workers: int = MISSING
    device: str = MISSING
    root: str | None = MISSING
    lightning: LightningSpec = field(default_factory=LightningSpec)

    def __post_init__(self) -> None:
        if self.name != MISSING:
            choice("engine.name", self.name, ("hf",))
        if self.decoding != MISSING:
            choice("engine.decoding", self.decoding, ("exact", "sampled", "generate"))
        if self.seed_mode != MISSING:
            choice("engine.seed_mode", self.seed_mode, ("literal", "hashed"))
        if self.prefix_sharing != MISSING:
            choice("engine.prefix_sharing", self.prefix_sharing, ("shared", "copy"))
        for key in ("suffix_batch_size", "branch_batch_size"):
            v = getattr(self, key)
            if v != MISSING and v != "auto" and not (isinstance(v, int) and v >= 1):
                raise StylisticBiasError(f"engine.{key}={v!r}: must be 'auto' or an integer >= 1")
        for key in ("max_branches_per_suffix", "image_batch_size"):
            v = getattr(self, key)
            if isinstance(v, int):
                at_least(f"engine.{key}", v, 1)


@dataclass(frozen=True)
class TransportSpec:
    """How the openai engine sends requests (per-endpoint overrides: ``endpoint.limits``)."""

    concurrency: int = MISSING
    connect_timeout_s: float = MISSING
    read_timeout_s: float = MISSING
    max_retries: int = MISSING
    backoff_base_s: float = MISSING
    backoff_max_s: float = MISSING
    rpm: float | None = MISSING
    tpm: float | None = MISSING


@dataclass(frozen=True)
class OpenAIEngineSpec:
    """OpenAI-compatible servers and APIs (stylisticbias.judge.engines.openai; docs/engines.md)."""

    name: str = MISSING
    decoding: str = MISSING
    exact_fallback: str = MISSING
    prune_threshold: float = MISSING
    max_branches_per_suffix: int = MISSING
    top_logprobs: int = MISSING
    #: exact: answer paths per request (``n`` sampled continuations, log-probabilities at
    #: every position); 0: one next-token list per request
    exact_paths: int = MISSING
    #: exact: sampling temperature of those paths (raw log-probabilities only; null: judge's)
    explore_temperature: float | None = MISSING
    #: exact: stop asking about a prompt once its live mass not yet asked about is this or less
    undecided_target: float = MISSING
    exact_requests_per_prompt: float = MISSING
    cache: str | None = MISSING
    progress: bool = MISSING
    transport: TransportSpec = field(default_factory=TransportSpec)
    image_batch_size: int = MISSING
    lightning: LightningSpec = field(default_factory=LightningSpec)
    #: judge a protocol whose licence forbids API models on a remote endpoint anyway
    allow_remote_licensed_images: bool = MISSING

    def __post_init__(self) -> None:
        if self.name != MISSING:
            choice("engine.name", self.name, ("openai",))
        if self.decoding != MISSING:
            choice("engine.decoding", self.decoding, ("generate", "exact", "sampled"))
        if self.exact_fallback != MISSING:
            choice("engine.exact_fallback", self.exact_fallback, ("none", "generate"))


#: engine name (``engine.name``) -> spec class
ENGINE_SPECS: Registry[type] = Registry(
    "engine",
    {"simulated": SimulatedEngineSpec, "hf": HFEngineSpec, "openai": OpenAIEngineSpec},
)
