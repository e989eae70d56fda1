"""Specs of the judged models (``conf/model/*.yaml``), one kind per engine.

Each model file is a Hydra config at package ``models.<name>``::

    # @package models.qwen3-vl-8b
    defaults:
      - /schema/model/hf@_here_   # this spec: unknown keys and wrong types fail composition
      - /engine@engine: hf        # the engine and its defaults (override keys under engine:)
      - _self_
    _target_: stylisticbias.judge.engines.hf.engine.HFJudgeEngine
    name: qwen3-vl-8b
    ...

``judge.model`` lists the judged models; each ``judge@MODEL`` DVC stage depends on
``models.MODEL`` only, so adding a model leaves the others' stages up to date.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from stylisticbias.registry import Registry
from stylisticbias.spec.engines import HFEngineSpec, OpenAIEngineSpec, SimulatedEngineSpec


@dataclass(frozen=True)
class SimulatedModelSpec:
    """A simulated judge: the planted effects scaled by ``effect_scale`` plus noise."""

    _target_: str = MISSING
    name: str = MISSING
    display_name: str = MISSING
    paper_name: str | None = None
    effect_scale: float = MISSING
    noise_sd: float = MISSING
    invalid_rate: float = MISSING
    seed: int = MISSING
    engine: SimulatedEngineSpec = field(default_factory=SimulatedEngineSpec)


@dataclass(frozen=True)
class HFModelSpec:
    """A transformers checkpoint judged locally (hub id or local directory)."""

    _target_: str = MISSING
    name: str = MISSING
    display_name: str = MISSING
    paper_name: str | None = MISSING
    hub_id: str = MISSING
    revision: str | None = MISSING
    dtype: str = MISSING
    attn_implementation: str | None = None
    local_build: str | None = None
    processor_kwargs: dict[str, Any] = field(default_factory=dict)
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    #: the most images one prompt may carry (a two-image pairwise task needs 2)
    max_images: int = 1
    engine: HFEngineSpec = field(default_factory=HFEngineSpec)


@dataclass(frozen=True)
class OpenAIModelSpec:
    """A model behind an OpenAI-compatible endpoint (checked by ``judge.engines.openai.spec``)."""

    _target_: str = MISSING
    name: str = MISSING
    display_name: str = MISSING
    paper_name: str | None = MISSING
    hub_id: str | None = None  # the local checkpoint a loopback/test server serves
    local_build: str | None = None
    endpoint: dict[str, Any] = MISSING
    prices: dict[str, Any] = field(default_factory=dict)
    #: the most images one prompt may carry (a two-image pairwise task needs 2)
    max_images: int = 1
    engine: OpenAIEngineSpec = field(default_factory=OpenAIEngineSpec)


#: engine name -> the model spec of that engine's models
MODEL_SPECS: Registry[type] = Registry(
    "model engine",
    {"simulated": SimulatedModelSpec, "hf": HFModelSpec, "openai": OpenAIModelSpec},
)

#: every model spec class
ModelSpec = SimulatedModelSpec | HFModelSpec | OpenAIModelSpec
