"""``DiffusersGenerator``: the generator class (pipeline loading, calls, batching)."""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image

from stylisticbias.errors import StylisticBiasError
from stylisticbias.generators.base import EditSpec, FaceSpec, Generator, GenResult
from stylisticbias.generators.diffusers_backend.settings import (
    DTYPES,
    FILE_FORMATS,
    FULL_BODY_MODES,
    OFFLOAD_MODES,
    FullBodySettings,
    PipelineSettings,
    full_body_canvas,
    round16,
)

log = logging.getLogger("stylisticbias.generators.diffusers_backend")


def _resolve_device(device: str) -> str:
    import torch

    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _chunks(items: Sequence[Any], n: int) -> list[list[Any]]:
    return [list(items[i : i + n]) for i in range(0, len(items), n)]


class DiffusersGenerator(Generator):
    """Text-to-image base faces and instruction-edit variations with diffusers pipelines.

    Args:
        base: text-to-image pipeline settings (:class:`PipelineSettings` fields) or a model id.
        edit: instruction-edit pipeline settings or a model id.
        dtype: ``float32`` | ``float16`` | ``bfloat16``.
        device: ``auto`` (cuda > mps > cpu), or a torch device string.
        offload: ``none`` (move the pipeline to ``device``), ``model``
            (``enable_model_cpu_offload``), ``sequential`` (``enable_sequential_cpu_offload``,
            slowest, least memory).
        local_files_only: never touch the network (models must be in the HF cache or local dirs).
        cache_dir: HF cache directory (null = the default).
        generator_device: where the per-request ``torch.Generator`` lives (``cpu`` = the same
            noise on every machine).
        full_body: :class:`FullBodySettings` fields for fashion edits.
        file_format: ``jpg`` | ``webp`` | ``png``; ``quality`` is used for jpg/webp.
        batch_size: requests per pipeline call.
        keep_both_loaded: keep base and edit pipelines in memory together (else loading one
            releases the other).
        progress_bar: show diffusers' per-call progress bars.
    """

    text_to_image = True  # prompts are sent as given: any prompt renders

    name = "diffusers"

    def __init__(
        self,
        base: Mapping[str, Any] | str,
        edit: Mapping[str, Any] | str,
        *,
        dtype: str = "bfloat16",
        device: str = "auto",
        offload: str = "none",
        local_files_only: bool = False,
        cache_dir: str | None = None,
        generator_device: str = "cpu",
        full_body: Mapping[str, Any] | None = None,
        file_format: str = "jpg",
        quality: int = 95,
        batch_size: int = 4,
        keep_both_loaded: bool = False,
        progress_bar: bool = False,
    ) -> None:
        where = "conf/generator (diffusers)"
        self.base_settings = PipelineSettings.from_config(base, f"{where}.base")
        self.edit_settings = PipelineSettings.from_config(edit, f"{where}.edit")
        for key, value, valid in (
            ("dtype", dtype, DTYPES),
            ("offload", offload, OFFLOAD_MODES),
            ("file_format", file_format, FILE_FORMATS),
        ):
            if value not in valid:
                raise StylisticBiasError(f"{where}.{key}: {value!r}; valid: {', '.join(valid)}")
        fb = dict(full_body or {})
        fb_valid = ("mode", "width", "height", "face_scale", "top_margin")
        unknown = sorted(set(fb) - set(fb_valid))
        if unknown:
            raise StylisticBiasError(
                f"{where}.full_body: unknown key(s) {', '.join(unknown)}; "
                f"valid: {', '.join(fb_valid)}"
            )
        self.full_body = FullBodySettings(**fb)
        if self.full_body.mode not in FULL_BODY_MODES:
            raise StylisticBiasError(
                f"{where}.full_body.mode: {self.full_body.mode!r}; "
                f"valid: {', '.join(FULL_BODY_MODES)}"
            )
        if not 0 < self.full_body.face_scale <= 1:
            raise StylisticBiasError(f"{where}.full_body.face_scale: must be in (0, 1]")
        if int(batch_size) < 1:
            raise StylisticBiasError(f"{where}.batch_size: must be >= 1, got {batch_size}")
        for s, sec in ((self.base_settings, "base"), (self.edit_settings, "edit")):
            if s.pipeline is not None:
                import diffusers

                if not hasattr(diffusers, s.pipeline):
                    raise StylisticBiasError(
                        f"{where}.{sec}.pipeline: {s.pipeline!r} is not a diffusers pipeline class "
                        "(e.g. FluxPipeline, FluxKontextPipeline, QwenImageEditPipeline, "
                        "StableDiffusionInstructPix2PixPipeline)"
                    )
        self.dtype_name = dtype
        self.device_setting = device
        self.offload = offload
        self.local_files_only = bool(local_files_only)
        self.cache_dir = cache_dir
        self.generator_device = generator_device
        self.file_format = file_format
        self.quality = int(quality)
        self.batch_size = int(batch_size)
        self.keep_both_loaded = bool(keep_both_loaded)
        self.progress_bar = bool(progress_bar)
        self._pipes: dict[str, Any] = {}
        self._warned: set[tuple[str, str]] = set()

    # ---- bookkeeping ---------------------------------------------------------------------
    @property
    def save_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``PIL.Image.save`` matching ``file_format``."""
        if self.file_format == "png":
            return {}
        return {"quality": self.quality}

    def describe(self) -> dict[str, Any]:
        """Provenance for manifests / MLflow: backend, model ids, revisions and settings."""
        return {
            "backend": self.name,
            "base_model": self.base_settings.model,
            "base_revision": self.base_settings.revision,
            "edit_model": self.edit_settings.model,
            "edit_revision": self.edit_settings.revision,
            "dtype": self.dtype_name,
            "full_body_mode": self.full_body.mode,
        }

    # ---- pipelines -----------------------------------------------------------------------
    def pipeline(self, which: str) -> Any:
        """The loaded ``base`` or ``edit`` pipeline (loading it on first use)."""
        if which in self._pipes:
            return self._pipes[which]
        if not self.keep_both_loaded:
            for other in list(self._pipes):
                self._release(other)
        settings = self.base_settings if which == "base" else self.edit_settings
        self._pipes[which] = self._load(settings, which)
        return self._pipes[which]

    def _load(self, s: PipelineSettings, which: str) -> Any:
        import diffusers
        import torch

        cls = getattr(diffusers, s.pipeline) if s.pipeline else diffusers.DiffusionPipeline
        kwargs: dict[str, Any] = {
            "dtype": getattr(torch, self.dtype_name),
            "local_files_only": self.local_files_only,
        }
        if s.revision:
            kwargs["revision"] = s.revision
        if s.variant:
            kwargs["variant"] = s.variant
        if self.cache_dir:
            kwargs["cache_dir"] = self.cache_dir
        log.info(
            "diffusers: loading %s pipeline %s (revision %s, %s)",
            which,
            s.model,
            s.revision,
            self.dtype_name,
        )
        try:
            pipe = cls.from_pretrained(s.model, **kwargs)
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StylisticBiasError(
                f"diffusers generator: cannot load {which}.model {s.model!r} "
                f"(revision {s.revision}, local_files_only={self.local_files_only}): {first}"
            ) from exc
        device = _resolve_device(self.device_setting)
        if self.offload == "model":
            pipe.enable_model_cpu_offload(device=device)
        elif self.offload == "sequential":
            pipe.enable_sequential_cpu_offload(device=device)
        else:
            pipe.to(device)
        pipe.set_progress_bar_config(disable=not self.progress_bar)
        return pipe

    def _release(self, which: str) -> None:
        pipe = self._pipes.pop(which, None)
        if pipe is None:
            return
        with contextlib.suppress(Exception):  # best effort
            pipe.remove_all_hooks()
        del pipe
        import gc

        import torch

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def close(self) -> None:
        """Drop both pipelines and free accelerator memory."""
        for which in list(self._pipes):
            self._release(which)

    # ---- calls ---------------------------------------------------------------------------
    def _generators(self, seeds: Sequence[int]) -> list[Any]:
        import torch

        return [torch.Generator(device=self.generator_device).manual_seed(int(s)) for s in seeds]

    def _run(
        self,
        pipe: Any,
        settings: PipelineSettings,
        prompts: list[str],
        seeds: list[int],
        *,
        image: Image.Image | None = None,
        size: tuple[int, int] | None = None,
        image_per_prompt: bool = True,
        resize_input: bool = True,
    ) -> list[GenResult]:
        # Only named parameters count: the pipelines' **kwargs exist for deprecated callbacks
        # and silently swallow anything else.
        params = inspect.signature(pipe.__call__).parameters

        def ok(name: str) -> bool:
            return name in params

        kwargs: dict[str, Any] = {
            "prompt": prompts,
            "generator": self._generators(seeds),
            "output_type": "pil",
        }
        if settings.num_inference_steps is not None:
            kwargs["num_inference_steps"] = settings.num_inference_steps
        if settings.guidance_scale is not None:
            kwargs["guidance_scale"] = settings.guidance_scale
        if size is not None:
            w, h = size
            if ok("height") and ok("width"):
                kwargs["height"], kwargs["width"] = h, w
            elif image is not None and image.size != size and resize_input:
                # e.g. InstructPix2Pix: the output has the input's size, so resize the input
                image = image.resize(size, Image.Resampling.LANCZOS)
            elif image is None or image.size != size:
                got = f"{image.size[0]}x{image.size[1]}" if image is not None else "no"
                raise StylisticBiasError(
                    f"diffusers generator: {type(pipe).__name__} takes no height/width, so it "
                    f"cannot produce a {w}x{h} image from a {got} input"
                    + ("; use full_body.mode: canvas" if image is not None else "")
                )
        if image is not None:
            kwargs["image"] = [image] * len(prompts) if image_per_prompt else image
        kwargs.update(settings.call_kwargs)
        for k in [k for k in kwargs if not ok(k)]:
            kwargs.pop(k)
            key = (type(pipe).__name__, k)
            if k in settings.call_kwargs and key not in self._warned:
                self._warned.add(key)
                log.warning("diffusers: %s takes no %r; call_kwargs entry ignored", *key)
        out = pipe(**kwargs)
        images = list(out.images)
        if len(images) != len(prompts):
            raise StylisticBiasError(
                f"diffusers generator: {type(pipe).__name__} returned {len(images)} images for "
                f"{len(prompts)} prompts"
            )
        flags = getattr(out, "nsfw_content_detected", None) or [False] * len(images)
        results: list[GenResult] = []
        for img, flagged in zip(images, flags):
            if flagged:
                results.append(GenResult(image=None, status="blocked", reason="nsfw filter"))
            else:
                results.append(GenResult(image=img.convert("RGB")))
        return results

    def generate_faces(self, specs: Sequence[FaceSpec]) -> list[GenResult]:
        """Render base faces with the text-to-image pipeline (prompts exactly as in the specs)."""
        if not specs:
            return []
        s = self.base_settings
        pipe = self.pipeline("base")
        size = (s.width, s.height) if s.width and s.height else None
        results: list[GenResult] = []
        for chunk in _chunks(specs, self.batch_size):
            results += self._run(
                pipe, s, [f.prompt for f in chunk], [f.seed for f in chunk], size=size
            )
        return results

    def full_body_size(self, base: Image.Image) -> tuple[int, int]:
        """(width, height) of full-body outputs for a given base image."""
        fb = self.full_body
        w = fb.width or base.width
        h = fb.height or round16(1.5 * w)
        return int(w), int(h)

    def edit(self, base: Image.Image, edits: Sequence[EditSpec]) -> list[GenResult]:
        """Apply each single-attribute edit to ``base`` with the edit pipeline."""
        if not edits:
            return []
        s = self.edit_settings
        pipe = self.pipeline("edit")
        base = base.convert("RGB")
        results: list[GenResult | None] = [None] * len(edits)
        face_idx = [i for i, e in enumerate(edits) if e.variation.framing != "full_body"]
        body_idx = [i for i, e in enumerate(edits) if e.variation.framing == "full_body"]
        # (request indices, input image, output size, may the input be resized to that size)
        groups: list[tuple[list[int], Image.Image, tuple[int, int], bool]] = []
        if face_idx:
            face_size = (s.width, s.height) if s.width and s.height else base.size
            groups.append((face_idx, base, face_size, True))
        if body_idx:
            size = self.full_body_size(base)
            if self.full_body.mode == "canvas":
                img = full_body_canvas(
                    base, size[0], size[1], self.full_body.face_scale, self.full_body.top_margin
                )
            else:
                img = base
            groups.append((body_idx, img, size, self.full_body.mode == "canvas"))
        for idx, img, size, resize in groups:
            for chunk in _chunks(idx, self.batch_size):
                out = self._run(
                    pipe,
                    s,
                    [edits[i].prompt for i in chunk],
                    [edits[i].seed for i in chunk],
                    image=img,
                    size=size,
                    image_per_prompt=s.image_per_prompt,
                    resize_input=resize,
                )
                for i, r in zip(chunk, out):
                    results[i] = r
        return [r for r in results if r is not None]
