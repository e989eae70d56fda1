"""Facial hair: the natural shadow of the base face, clean-shaven, stubble, mustache, full beard."""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).

from __future__ import annotations

import numpy as np

from stylisticbias.generators.procedural.canvas import Canvas, Layer, Pen, shade
from stylisticbias.generators.procedural.face_features import lips_mask_points
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point


def _mustache(g: FaceGeometry, grow: float) -> list[Point]:
    cx, my, mw, ny = g.cx, g.mouth_y - g.lip_up, g.mouth_w, g.nose_y
    return [
        (cx - mw * 1.15, my + 0.012 + grow),
        (cx - mw * 0.9, ny + 0.008),
        (cx - g.nose_w * 0.5, ny + 0.003),
        (cx, ny + 0.006),
        (cx + g.nose_w * 0.5, ny + 0.003),
        (cx + mw * 0.9, ny + 0.008),
        (cx + mw * 1.15, my + 0.012 + grow),
        (cx + mw * 0.6, my + 0.001),
        (cx, my + 0.002),
        (cx - mw * 0.6, my + 0.001),
    ]


def _stubble(c: Canvas, L: Layer, g: FaceGeometry, region: np.ndarray, a: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    col = shade(g.brow_rgb, 0.8)
    L.paint(_region(c, g), col, a * 0.45)
    ys, xs = np.nonzero(region > 0.5)
    if len(xs) == 0:
        return
    idx = rng.choice(len(xs), size=min(len(xs), 1400), replace=False)

    def dots(p: Pen) -> None:
        for i in idx:
            x, y = (xs[i] + rng.uniform()) / c.w, (ys[i] + rng.uniform()) / c.w
            p.ellipse(x, y, 0.0011, 0.0011)

    L.paint(c.mask(dots).times(region), col, a)


def _region(c: Canvas, g: FaceGeometry):
    lip = lips_mask_points(g)

    def beard(p: Pen) -> None:
        p.smooth(g.lower_face())
        p.smooth(_mustache(g, 0.0))
        p.poly(lip, fill=0)

    return c.mask(beard, blur=0.004)


def render(c: Canvas, g: FaceGeometry, kind: str | None, skin: np.ndarray) -> Layer:
    """The facial-hair layer for ``kind`` (None = the identity's natural shadow)."""
    L = c.layer()
    if not g.male and kind is None:
        return L
    region_m = _region(c, g)
    region = c.full(region_m)
    if kind is None:  # a faint natural shadow on male faces
        soft = c.mask(
            lambda p: (p.smooth(g.lower_face()), p.poly(lips_mask_points(g), fill=0)), blur=0.012
        )
        L.paint(
            soft.times(c.full(c.mask(lambda p: p.smooth(g.outline())))),
            shade(g.brow_rgb, 0.9),
            g.shadow * 0.5,
        )
        return L
    if kind == "Clean-shaven":  # freshly shaved: smooth, slightly lighter and rosier jaw
        smooth = skin * np.float32(1.06)
        smooth[..., 0] *= np.float32(1.03)
        L.paint(region_m, np.clip(smooth, 0, 1).astype(np.float32), 0.85)
        L.paint(
            c.mask(lambda p: p.ellipse(g.cx + g.fw * 0.45, g.jaw_y - 0.02, 0.03, 0.015), blur=0.01),
            (255, 250, 248),
            0.2,
        )
        return L
    if kind == "Stubble":
        _stubble(c, L, g, region, 0.75, g.accent + 3)
        return L
    hair = g.brow_rgb
    dark = shade(hair, 0.6)
    if kind == "Mustache":
        m = c.mask(lambda p: p.smooth(_mustache(g, 0.006)), blur=0.001)
        L.paint(m, hair)
        L.paint(
            c.mask(
                lambda p: [
                    p.line(
                        [
                            (g.cx + k * 0.006, g.nose_y + 0.008),
                            (g.cx + k * 0.0072, g.mouth_y - 0.003),
                        ],
                        0.0016,
                    )
                    for k in range(-8, 9)
                ]
            ).times(c.full(m)),
            dark,
            0.6,
        )
        return L
    if kind == "Full beard":
        lip = lips_mask_points(g)
        cx = g.cx

        def beard(p: Pen) -> None:
            pts = g.lower_face()
            grown = [
                (cx + (x - cx) * 1.06, y + (0.04 if y > g.mouth_y + 0.03 else 0.0))
                for x, y in pts[:9]
            ]
            p.smooth(grown + pts[9:])
            p.smooth(_mustache(g, 0.006))
            # sideburns up to the ears
            for s in (-1, 1):
                p.poly(
                    [
                        (cx + s * g.fw * 0.98, g.ear_y0 + 0.01),
                        (cx + s * (g.fw + 0.006), g.ear_y0 + 0.01),
                        (cx + s * (g.fw + 0.004), g.nose_y),
                        (cx + s * g.fw * 0.85, g.nose_y),
                    ]
                )
            p.poly(lip, fill=0)

        m = c.mask(beard, blur=0.002)
        L.paint(m, hair)
        rng = np.random.default_rng(g.accent + 5)
        ys, xs = np.nonzero(c.full(m) > 0.6)
        idx = rng.choice(len(xs), size=min(len(xs), 700), replace=False)

        def strands(p: Pen) -> None:
            for i in idx:
                x, y = xs[i] / c.w, ys[i] / c.w
                d = 0.006 if x > cx else -0.006
                p.line([(x, y), (x + d * 0.4, y + 0.008)], 0.0015)

        L.paint(c.mask(strands).times(c.full(m)), dark, 0.55)
        L.paint(c.mask(strands).times(c.full(m)), shade(hair, 1.4), 0.15)
        return L
    raise ValueError(
        f"unknown facial hair {kind!r}; valid: Clean-shaven, Stubble, Mustache, Full beard"
    )
