"""Specs of the image generators (``conf/generator/*.yaml``); ``_target_`` names the class."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from stylisticbias.registry import Registry


@dataclass(frozen=True)
class ProceduralSpec:
    """Offline vector-drawn faces (stylisticbias.generators.procedural)."""

    _target_: str = MISSING
    size: int = MISSING
    batch_size: int = MISSING
    workers: int = MISSING


@dataclass(frozen=True)
class DiffusersPipelineSpec:
    """One diffusers pipeline (base text-to-image, or instruction edit)."""

    model: str = MISSING
    revision: str | None = MISSING
    pipeline: str | None = MISSING
    variant: str | None = MISSING
    num_inference_steps: int = MISSING
    guidance_scale: float | None = MISSING
    height: int | None = MISSING
    width: int | None = MISSING
    call_kwargs: dict[str, Any] = field(default_factory=dict)
    image_per_prompt: bool = True


@dataclass(frozen=True)
class FullBodySpec:
    """How full-body (fashion) edits are framed."""

    mode: str = MISSING
    width: int = MISSING
    height: int = MISSING
    face_scale: float = MISSING
    top_margin: float = MISSING


@dataclass(frozen=True)
class DiffusersSpec:
    """Local open models through diffusers (stylisticbias.generators.diffusers_backend)."""

    _target_: str = MISSING
    base: DiffusersPipelineSpec = field(default_factory=DiffusersPipelineSpec)
    edit: DiffusersPipelineSpec = field(default_factory=DiffusersPipelineSpec)
    full_body: FullBodySpec = field(default_factory=FullBodySpec)
    dtype: str = MISSING
    device: str = MISSING
    offload: str = MISSING
    local_files_only: bool = MISSING
    cache_dir: str | None = MISSING
    generator_device: str = MISSING
    file_format: str = MISSING
    quality: int = MISSING
    batch_size: int = MISSING
    workers: int = MISSING
    keep_both_loaded: bool = MISSING
    progress_bar: bool = MISSING


@dataclass(frozen=True)
class GeminiSpec:
    """The paper's generators: Imagen 4 faces, Gemini 2.5 Flash Image edits."""

    _target_: str = MISSING
    base_model: str = MISSING
    edit_model: str = MISSING
    vertexai: bool = MISSING
    project: str | None = MISSING
    location: str | None = MISSING
    api_key_env: list[str] = MISSING
    base_url: str | None = MISSING
    api_version: str | None = MISSING
    timeout_s: float = MISSING
    max_retries: int = MISSING
    backoff_initial_s: float = MISSING
    backoff_max_s: float = MISSING
    backoff_jitter_s: float = MISSING
    concurrency: int = MISSING
    batch_size: int = MISSING
    workers: int = MISSING
    send_seed: bool = MISSING
    imagen_config: dict[str, Any] = field(default_factory=dict)
    edit_config: dict[str, Any] = field(default_factory=dict)
    full_body_aspect_ratio: str | None = MISSING
    file_format: str = MISSING
    quality: int = MISSING


@dataclass(frozen=True)
class ImportSpec:
    """An existing image set (stylisticbias.dataset.importer; README "Judge your own images")."""

    _target_: str = MISSING
    layout: str = MISSING
    source: str = MISSING
    materialize: str = MISSING
    on_error: str = MISSING
    watch_dir: str = MISSING
    license: str | None = MISSING  # the set's licence (SPDX id or URL); null = not given
    pattern: str | None = MISSING  # layout counterfactual: the edit file stem's demographics
    max_image_bytes: int = MISSING  # the largest image file read (stat-checked before opening)
    aliases: list[dict[str, Any]] = field(default_factory=list)


#: generator option (conf/generator/<option>.yaml) kind -> spec class
GENERATOR_SPECS: Registry[type] = Registry(
    "generator",
    {
        "procedural": ProceduralSpec,
        "diffusers": DiffusersSpec,
        "gemini": GeminiSpec,
        "import": ImportSpec,
    },
)
