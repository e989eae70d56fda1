"""The ``beautify`` edit of the procedural generator: a beauty-filter stand-in (tests, demos).

What a selfie app's beauty filter does, drawn on the rendered face and only inside the head's
silhouette (every pixel outside it is the base image's): features pulled towards their mirror
image (more symmetric), skin smoothed (a Gaussian blur blended in) and evened and brightened,
the eyes brightened. It is a deterministic function of the base render, so the pair
(original, beautified) of a face is reproducible. It is not a model of a real filter: the
diffusers and Gemini generators apply the protocol's edit prompt to real images instead.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter

from stylisticbias.generators.procedural.geometry import FaceGeometry

#: the variation key (``attributes[].key`` of a protocol) this edit draws
KEY = "beautify"
SYMMETRY = 0.5  # weight of the mirror image (0.5 = fully symmetric inside the face)
SMOOTH = 0.8  # weight of the blurred skin where the image is flat
SMOOTH_SIGMA = 0.008  # blur radius in face-canvas widths
EDGE = 0.03  # local contrast above which features (eyes, brows, lips) are kept sharp
GLOW = 0.05  # skin brightening
EYE_LIFT = 0.12  # brightening of the eye regions


def head_mask(alpha: np.ndarray) -> np.ndarray:
    """The head layer's coverage (0-1), the only region the edit changes."""
    return np.clip(alpha, 0.0, 1.0).astype(np.float32)


def beautify(image: np.ndarray, g: FaceGeometry, head_alpha: np.ndarray) -> np.ndarray:
    """``image`` (uint8 HxWx3, the base render) with the beauty filter applied in the head."""
    x = image.astype(np.float32) / 255.0
    h, w = x.shape[:2]
    m = head_mask(head_alpha)
    cols = np.arange(w)
    mirror = np.clip(np.round(2 * g.cx * w - 1 - cols), 0, w - 1).astype(np.int64)
    both = (m * m[:, mirror])[..., None]  # the face on both sides of its axis
    x = x * (1 - SYMMETRY * both) + x[:, mirror] * (SYMMETRY * both)
    blur = gaussian_filter(x, sigma=(SMOOTH_SIGMA * w, SMOOTH_SIGMA * w, 0))
    flat = np.exp(-np.abs(x - blur).max(axis=-1, keepdims=True) / EDGE)  # edge-preserving
    mm = m[..., None]
    x = x * (1 - SMOOTH * mm * flat) + blur * (SMOOTH * mm * flat)
    x = x + GLOW * mm * (1.0 - x)
    ys, xs = (np.mgrid[0:h, 0:w].astype(np.float32) + 0.5) / w
    eyes = np.zeros((h, w), np.float32)
    for side in (-1.0, 1.0):
        ex = g.cx + side * g.eye_dx
        eyes += np.exp(
            -(((xs - ex) / (g.eye_w * 1.3)) ** 2 + ((ys - g.eye_y) / (g.eye_h * 2.5)) ** 2)
        )
    x = x + EYE_LIFT * (eyes * m)[..., None] * (1.0 - x)
    return (np.clip(x, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
