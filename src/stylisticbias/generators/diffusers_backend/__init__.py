"""Photoreal generator on local open models through diffusers.

Base faces come from a text-to-image pipeline (default FLUX.1-dev; SDXL, SD3.5 or any
``DiffusionPipeline`` id work), variations from an instruction-edit pipeline (default
FLUX.1-Kontext-dev; ``QwenImageEditPipeline`` and ``StableDiffusionInstructPix2PixPipeline``
work too). Both are loaded with ``DiffusionPipeline.from_pretrained`` from a hub id or a local
directory, lazily on first use, and only one of them is kept in memory at a time unless
``keep_both_loaded`` is set.

Determinism: every request gets its own ``torch.Generator`` seeded from ``spec.seed`` (created
on ``generator_device``, CPU by default, so a seed draws the same initial noise on any
hardware), and a batch passes one generator per prompt. The same seed therefore gives the same
image whatever else is in the batch (up to the floating-point noise of batched kernels).

Full-body fashion edits (``framing == "full_body"``, paper Fig. 11) need a taller canvas than
the head-and-shoulders base portrait. ``full_body.mode`` chooses how:

* ``canvas`` (default, works with every edit pipeline): the portrait is scaled to
  ``full_body.face_scale`` of the canvas width and pasted top-centre on a plain white canvas of
  ``full_body.width`` x ``full_body.height`` (white = the prompt's studio backdrop); the edit
  pipeline paints the body below the head and the output has the canvas size.
* ``reference``: the unmodified portrait is the reference image and the output size is
  requested through the pipeline's ``height``/``width`` (FluxKontext, QwenImageEdit; not
  InstructPix2Pix, whose output always has the input's size).

Sizes: base faces are ``base.height`` x ``base.width``; face edits keep the base image's size
unless ``edit.height``/``edit.width`` are set. Pipelines without ``height``/``width`` arguments
(InstructPix2Pix) get their input resized to the requested size instead.

A pipeline whose safety checker flags an image (``nsfw_content_detected``) yields
``GenResult(status="blocked", reason="nsfw filter")``; its blacked-out image is dropped.

Modules: ``settings`` (pipeline and full-body settings, option values, the full-body canvas) and
``generator`` (:class:`DiffusersGenerator`). The package is hashed as a whole into the render
cache keys, so a change to any of its modules re-renders.
"""

from stylisticbias.generators.diffusers_backend.generator import DiffusersGenerator
from stylisticbias.generators.diffusers_backend.settings import (
    DTYPES,
    FILE_FORMATS,
    FULL_BODY_MODES,
    OFFLOAD_MODES,
    FullBodySettings,
    PipelineSettings,
    full_body_canvas,
)

__all__ = [
    "DTYPES",
    "FILE_FORMATS",
    "FULL_BODY_MODES",
    "OFFLOAD_MODES",
    "DiffusersGenerator",
    "FullBodySettings",
    "PipelineSettings",
    "full_body_canvas",
]
