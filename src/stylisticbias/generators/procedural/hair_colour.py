"""Hair colour: the per-identity strand texture and the full-canvas colour field."""

from __future__ import annotations

import numpy as np

from stylisticbias.generators.procedural import palette
from stylisticbias.generators.procedural.canvas import Canvas
from stylisticbias.generators.procedural.geometry import FaceGeometry


def texture(c: Canvas, seed: int) -> np.ndarray:
    """Per-identity strand texture in about [-1, 1]: streaks stretched along y."""
    rng = np.random.default_rng(seed)
    w, h = c.w, c.h
    coarse = rng.normal(0, 1, size=(max(2, h // 12), w)).astype(np.float32)
    # smooth across x a little, stretch along y
    k = np.array([0.25, 0.5, 0.25], np.float32)
    coarse = np.apply_along_axis(lambda r: np.convolve(r, k, mode="same"), 1, coarse)
    ys = np.linspace(0, coarse.shape[0] - 1, h)
    i0 = np.floor(ys).astype(int)
    i1 = np.minimum(i0 + 1, coarse.shape[0] - 1)
    t = (ys - i0)[:, None].astype(np.float32)
    out = coarse[i0] * (1 - t) + coarse[i1] * t
    return np.clip(out / 1.2, -1.5, 1.5).astype(np.float32)


def colour_field(
    c: Canvas, g: FaceGeometry, tex: np.ndarray, name: str | None, *, wet: bool = False
) -> np.ndarray:
    """Full-canvas hair colour: base colour x strand texture + a sheen band over the crown."""
    if name is None:
        base, sheen, k = g.hair, tuple(min(255.0, v * 1.6 + 30) for v in g.hair), 0.22
    elif name == "Unnatural":
        base, sheen = palette.UNNATURAL[g.unnatural % len(palette.UNNATURAL)]
        k = 0.4
    else:
        base, sheen, k = palette.NAMED_HAIR[name]
    if wet:
        k = min(0.8, k + 0.3)
    b = np.asarray(base, np.float32) / 255
    sh = np.asarray(sheen, np.float32) / 255
    amp = 0.16 if name in (None, "Black") else 0.22
    field = b[None, None, :] * (1 + amp * tex)[..., None]
    d = ((c.X - g.cx) / (g.fw * 1.3)) ** 2 + ((c.Y - (g.top + 0.035)) / 0.03) ** 2
    band = np.exp(-d * 1.5) * (0.6 + 0.4 * np.clip(tex, -1, 1))
    field = field * (1 - k * band[..., None]) + sh[None, None, :] * (k * band)[..., None]
    return np.clip(field, 0, 1).astype(np.float32)
