"""Pixel-level edit locality: the change inside vs outside the edited region's mask.

For a base face ``B`` and one of its edits ``E`` (same size, uint8 RGB), the per-pixel change is
``d = mean_c |E - B| / 255`` (0 = identical, 1 = black <-> white). With the mask ``M`` of the
pixels the edit may touch:

* ``diff_inside``  = mean of ``d`` over ``M``;  ``diff_outside`` = mean of ``d`` over ``~M``
  (REFLECT's ``diff_face`` / ``diff_nonface``), ``gap`` = inside - outside,
  ``ratio`` = inside / outside (null when nothing outside changed);
* ``changed_outside`` = share of outside pixels whose change exceeds ``pixel_tol``;
* ``leak`` = share of all changed pixels (``d > pixel_tol``) that lie outside ``M``.

An edit passes when ``diff_outside <= max_outside`` and ``changed_outside <= max_changed_outside``.

Masks come from a :class:`MaskSource`. The procedural generator knows exactly which pixels an
attribute draws (``ProceduralGenerator.edit_mask``: every pixel a changed layer covers in the base
or in the edit), so its masks are exact (``mask_source = "layers"``). Other generators have no
mask without a segmentation model; their rows carry only ``diff_all`` (the whole-image change) and
``mask_source = "none"``, and no locality verdict (never a made-up region).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

log = logging.getLogger(__name__)

#: ``mask_source`` values: exact layer masks, no mask available, images not comparable
MASK_SOURCES = ("layers", "none", "not_comparable")


@dataclass(frozen=True)
class LocalityThresholds:
    """When an edit counts as local (``qa.locality`` in ``conf/config.yaml``)."""

    pixel_tol: float
    max_outside: float
    max_changed_outside: float


@dataclass(frozen=True)
class Locality:
    """The locality measures of one edit (see the module docstring); NaN where undefined."""

    mask_share: float
    diff_inside: float
    diff_outside: float
    diff_all: float
    changed_outside: float
    leak: float

    @property
    def gap(self) -> float:
        """``diff_inside - diff_outside``."""
        return self.diff_inside - self.diff_outside

    @property
    def ratio(self) -> float:
        """``diff_inside / diff_outside`` (NaN when nothing outside changed)."""
        if not self.diff_outside > 0:
            return float("nan")
        return self.diff_inside / self.diff_outside

    def passes(self, t: LocalityThresholds) -> bool | None:
        """Whether the edit is local under ``t`` (None when there is no mask to judge by)."""
        if np.isnan(self.diff_outside):
            return None
        return bool(
            self.diff_outside <= t.max_outside and self.changed_outside <= t.max_changed_outside
        )


def pixel_change(base: np.ndarray, edit: np.ndarray) -> np.ndarray:
    """Per-pixel change ``mean_c |edit - base| / 255`` (float64, H x W) of two uint8 RGB images."""
    if base.shape != edit.shape:
        raise ValueError(f"images differ in shape: {base.shape} vs {edit.shape}")
    diff = np.abs(edit.astype(np.int16) - base.astype(np.int16)).astype(np.float64)
    return diff.mean(axis=-1) / 255.0 if diff.ndim == 3 else diff / 255.0


def edit_locality(
    base: np.ndarray, edit: np.ndarray, mask: np.ndarray | None, pixel_tol: float
) -> Locality:
    """The locality measures of ``edit`` against ``base`` for the region ``mask`` (bool H x W).

    ``mask=None``: only ``diff_all`` is defined (the other measures are NaN).
    """
    d = pixel_change(base, edit)
    nan = float("nan")
    diff_all = float(d.mean())
    if mask is None:
        return Locality(nan, nan, nan, diff_all, nan, nan)
    m = np.asarray(mask, bool)
    if m.shape != d.shape:
        raise ValueError(f"mask is {m.shape}, images are {d.shape}")
    inside, outside = d[m], d[~m]
    changed = d > pixel_tol
    n_changed = int(changed.sum())
    return Locality(
        mask_share=float(m.mean()),
        diff_inside=float(inside.mean()) if inside.size else nan,
        diff_outside=float(outside.mean()) if outside.size else nan,
        diff_all=diff_all,
        changed_outside=float(changed[~m].mean()) if outside.size else nan,
        leak=float(changed[~m].sum() / n_changed) if n_changed else 0.0,
    )


class MaskSource(Protocol):
    """Where an edit's region comes from: ``mask(face, variation)`` or None when unknown."""

    name: str

    def mask(self, face: Mapping[str, Any], variation: Any) -> np.ndarray | None:
        """The bool mask (H x W) of the pixels ``variation`` may change on ``face``, or None."""


class NoMasks:
    """No region is known (generators without a mask: diffusion models, APIs, imported sets)."""

    name = "none"

    def mask(self, face: Mapping[str, Any], variation: Any) -> np.ndarray | None:
        """Always None."""
        return None


class GeneratorMasks:
    """Exact masks from a generator that knows what each attribute draws (``edit_mask``).

    ``face`` is a row of ``faces.parquet`` (its identity fields rebuild the generator's
    :class:`~stylisticbias.generators.base.FaceSpec`), ``variation`` a
    :class:`~stylisticbias.benchmark.VariationValue`.
    """

    name = "layers"

    def __init__(self, generator: Any) -> None:
        if not callable(getattr(generator, "edit_mask", None)):
            raise TypeError(f"{type(generator).__name__} has no edit_mask")
        self.generator = generator

    def mask(self, face: Mapping[str, Any], variation: Any) -> np.ndarray | None:
        """The generator's mask of ``variation`` on ``face``."""
        from stylisticbias.generators.base import FaceSpec

        spec = FaceSpec(
            str(face["face_id"]),
            str(face["age"]),
            str(face["gender"]),
            str(face["ethnicity"]),
            str(face["body_type"]),
            int(face["seed"]),
            str(face["prompt"]),
        )
        return np.asarray(self.generator.edit_mask(spec, variation), bool)


def mask_source_for(generator: Any) -> MaskSource:
    """:class:`GeneratorMasks` when ``generator`` exposes ``edit_mask``, else :class:`NoMasks`."""
    if generator is not None and callable(getattr(generator, "edit_mask", None)):
        return GeneratorMasks(generator)
    return NoMasks()
