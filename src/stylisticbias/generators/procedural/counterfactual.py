"""Face-only counterfactual sets: one source identity redrawn for every target demographic cell
with everything outside the face region bit-identical (REFLECT's FOCUS images, offline).

A source photo is a :class:`~.scene.FaceScene`. An *edit* to a target cell (e.g. ethnicity x
gender) keeps the source's scene layers -- background, hair (back, drape, front), clothing,
accessories -- as the very same layer objects, and redraws only the *face layers* (the head
with its ears, the features, the lips and the natural facial-hair shadow, and the skin of the
neck) from a hybrid geometry: the source's face outline, hairline, neck and shoulders (so the
hair and the clothes sit exactly where they were) with the target cell's skin tone, eye, brow,
nose and lip shapes and colours, lashes and beard shadow (:data:`FACE_FIELDS`). The target's
traits are drawn from the source's identity seed under the target cell, so every edit of a
source -- its own cell included -- is an edit, as REFLECT's ten are.

Compositing a layer whose alpha is 0 is the identity in floating point
(:mod:`~.canvas`), so a pixel that no face layer covers, in the source or in any edit, has the
same value in every edit. :func:`counterfactual_set` returns that region as the set's
*face mask* (one per source, the same for every edit): the union over the set of the pixels the
face layers cover (for the neck-and-clothes layer: the pixels where its two versions differ).
Outside it the edits are equal to the bit; the tests check it on the rendered pixels. REFLECT
allows hair to change a little for plausibility; here it never changes (the hair is outside the
face mask wherever it is opaque).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from stylisticbias.generators.base import FaceSpec
from stylisticbias.generators.procedural import face
from stylisticbias.generators.procedural.canvas import Layer, over, to_uint8
from stylisticbias.generators.procedural.geometry import FaceGeometry, face_geometry, identity_rng
from stylisticbias.generators.procedural.scene import LAYERS, FaceScene

#: the demographic axes a counterfactual edit may change (age and body type shape the head,
#: the neck and the clothes, which stay the source's)
EDITABLE_AXES = ("ethnicity", "gender")
#: geometry fields an edit takes from the target cell (everything else stays the source's)
FACE_FIELDS = (
    "male",
    "skin",
    "brow_rgb",
    "iris",
    "lip",
    "eye_dx",
    "eye_w",
    "eye_h",
    "brow_w",
    "brow_thick",
    "brow_arch",
    "nose_w",
    "mouth_w",
    "lip_up",
    "lip_lo",
    "shadow",
)
#: the layers an edit redraws (the face; ``body`` for the skin of the neck)
FACE_LAYERS = ("body", "head", "skin_marks", "features", "makeup", "lips", "facial_hair")
#: the stream of the identity seed the target traits are drawn from
EDIT_STREAM = "counterfactual"


@dataclass(frozen=True)
class CounterfactualSet:
    """The edits of one source: ``images`` (uint8 RGB, one per target, in the order asked),
    ``source`` (the unedited source image) and ``mask`` (bool HxW: the face region, the same
    for every edit; outside it every edit equals every other to the bit)."""

    images: tuple[np.ndarray, ...]
    source: np.ndarray
    mask: np.ndarray


def edit_geometry(source: FaceSpec, target: Mapping[str, str]) -> FaceGeometry:
    """The hybrid geometry of one edit: the source's, with :data:`FACE_FIELDS` of the target
    cell drawn from the source's seed (the brow height kept relative to the source's eyes)."""
    bad = sorted(set(target) - set(EDITABLE_AXES))
    if bad:
        raise ValueError(
            f"counterfactual edits change {', '.join(EDITABLE_AXES)} only; got {', '.join(bad)}"
        )
    src = face_geometry(source)
    seed = int(identity_rng(source, EDIT_STREAM).integers(0, 2**31))
    tgt = face_geometry(replace(source, seed=seed, **dict(target)))
    fields = {f: getattr(tgt, f) for f in FACE_FIELDS}
    fields["brow_y"] = src.eye_y + (tgt.brow_y - tgt.eye_y)
    return replace(src, **fields)


def _edit_scene(base: FaceScene, g: FaceGeometry) -> FaceScene:
    """A scene drawing the face layers of ``g`` (its skin tone on the source's skin texture)."""
    sc = copy.copy(base)
    sc.g = g
    seeds = identity_rng(base.spec, "textures").integers(0, 2**31, size=4)
    sc.skin = face.skin_field(base.c, g, int(seeds[0]))
    sc._cache, sc._prefix, sc._base_img = {}, None, None
    return sc


def _composite(layers: Sequence[Layer], shape: tuple[int, int]) -> np.ndarray:
    out = np.ones((*shape, 3), np.float32)
    for lay in layers:
        over(out, lay)
    return to_uint8(out)


def counterfactual_set(
    source: FaceSpec, targets: Sequence[Mapping[str, str]], size: int = 256
) -> CounterfactualSet:
    """Render ``source`` edited to each of ``targets`` (``{"ethnicity": ..., "gender": ...}``;
    see the module doc)."""
    base = FaceScene(source, size)
    look = base.base
    shape = (base.c.h, base.c.w)
    src_layers = base.layers(look)
    mask = np.zeros(shape, bool)
    images = []
    for target in targets:
        sc = _edit_scene(base, edit_geometry(source, target))
        layers = []
        for name, src_lay in zip(LAYERS, src_layers):
            if name not in FACE_LAYERS:
                layers.append(src_lay)
                continue
            lay = sc.layer(name, look)
            if name == "body":  # neck and clothes: only where the two versions differ
                mask |= np.any(lay.rgba != src_lay.rgba, axis=-1)
            else:
                mask |= (lay.alpha > 0) | (src_lay.alpha > 0)
            layers.append(lay)
        images.append(_composite(layers, shape))
    return CounterfactualSet(tuple(images), _composite(src_layers, shape), mask)
