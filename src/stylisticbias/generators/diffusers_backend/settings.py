"""Settings of the diffusers generator: the YAML sections of its two pipelines and of full-body
fashion edits, the valid option values, and the full-body canvas."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from stylisticbias.errors import StylisticBiasError

DTYPES = ("float32", "float16", "bfloat16")
OFFLOAD_MODES = ("none", "model", "sequential")
FILE_FORMATS = ("jpg", "webp", "png")
FULL_BODY_MODES = ("canvas", "reference")

_SECTION_KEYS = (
    "model",
    "revision",
    "pipeline",
    "variant",
    "num_inference_steps",
    "guidance_scale",
    "height",
    "width",
    "call_kwargs",
    "image_per_prompt",
)


@dataclass
class PipelineSettings:
    """One pipeline of the generator (``base`` or ``edit`` section of the YAML)."""

    model: str
    revision: str | None = "main"
    #: diffusers class name (e.g. ``FluxKontextPipeline``); null = the ``_class_name`` in the
    #: model's model_index.json
    pipeline: str | None = None
    #: weight variant (e.g. ``fp16``), null = the default weights
    variant: str | None = None
    num_inference_steps: int | None = None
    guidance_scale: float | None = None
    #: output size; for edits null = the size of the base image (face) or canvas (full body)
    height: int | None = None
    width: int | None = None
    #: extra ``__call__`` kwargs, e.g. ``{image_guidance_scale: 1.5}`` or ``{true_cfg_scale: 4.0,
    #: negative_prompt: " "}``
    call_kwargs: dict[str, Any] = field(default_factory=dict)
    #: edits: pass the base image once per prompt (a list); false = pass it once (pipelines
    #: such as QwenImageEditPlusPipeline read a list as several reference images)
    image_per_prompt: bool = True

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | str, where: str) -> PipelineSettings:
        """Build from a YAML section (a mapping, or just the model id)."""
        if isinstance(section, str):
            return cls(model=section)
        data = dict(section)
        unknown = sorted(set(data) - set(_SECTION_KEYS))
        if unknown:
            raise StylisticBiasError(
                f"{where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(_SECTION_KEYS)}"
            )
        if not data.get("model"):
            raise StylisticBiasError(f"{where}.model: required (a hub id or a local directory)")
        data["call_kwargs"] = dict(data.get("call_kwargs") or {})
        return cls(**data)


@dataclass
class FullBodySettings:
    """How full-body fashion edits get their portrait-to-full-body canvas."""

    mode: str = "canvas"
    #: canvas / output size; null = base width and 1.5 x base width (rounded to 16 px)
    width: int | None = None
    height: int | None = None
    #: canvas mode: width of the pasted portrait as a share of the canvas width
    face_scale: float = 0.4
    #: canvas mode: gap above the pasted portrait as a share of the canvas height
    top_margin: float = 0.02


def round16(x: float) -> int:
    """``x`` rounded to a multiple of 16 (at least 16)."""
    return max(16, round(x / 16.0) * 16)


def full_body_canvas(
    base: Image.Image, width: int, height: int, face_scale: float, top_margin: float
) -> Image.Image:
    """White ``width`` x ``height`` canvas with ``base`` scaled and pasted top-centre."""
    canvas = Image.new("RGB", (width, height), (255, 255, 255))
    pw = max(1, round(width * face_scale))
    ph = max(1, round(base.height * pw / base.width))
    portrait = base.convert("RGB").resize((pw, ph), Image.Resampling.LANCZOS)
    canvas.paste(portrait, ((width - pw) // 2, round(height * top_margin)))
    return canvas
