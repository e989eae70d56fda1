"""The bare base face: background, neck and shoulders, shaded head with ears, facial features.

The facial features (eyes, brows, nose, mouth) live in ``face_features`` and are re-exported here.
"""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).
# ruff: noqa: B023

from __future__ import annotations

import numpy as np

from stylisticbias.generators.procedural.canvas import Canvas, Layer, Pen, bezier, shade
from stylisticbias.generators.procedural.face_features import (
    eye_points,
    features,
    lips_mask,
    lips_mask_points,
    mouth_line,
    upper_lip,
)
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point

__all__ = [
    "background",
    "body",
    "eye_points",
    "features",
    "head",
    "lips_mask",
    "lips_mask_points",
    "mouth_line",
    "skin_field",
    "upper_lip",
]


def _gauss(c: Canvas, x: float, y: float, sx: float, sy: float) -> np.ndarray:
    return np.exp(-(((c.X - x) / sx) ** 2 + ((c.Y - y) / sy) ** 2) / 2)


def skin_field(c: Canvas, g: FaceGeometry, seed: int) -> np.ndarray:
    """Full-canvas shaded skin colour (0-1 RGB): rounded-form falloff, warm cheeks, highlights."""
    cy = g.eye_y + 0.03
    ry = (g.chin - g.top) / 2
    dy = np.where(g.chin < c.Y, 0.0, (c.Y - cy) / (ry * 1.05))
    r2 = ((c.X - g.cx) / (g.fw * 1.05)) ** 2 + dy**2
    s = 1.06 - 0.26 * np.clip(r2, 0, 1.8) ** 1.6
    s += 0.05 * _gauss(c, g.cx, g.top + 0.08, 0.07, 0.04)  # forehead light
    s += 0.035 * _gauss(c, g.cx, (g.eye_y + g.nose_y) / 2, 0.008, 0.04)
    # neck and below the jaw fall into the head's shadow
    below = np.clip((c.Y - g.chin + 0.01) / 0.05, 0, 1) * np.clip(1 - (c.Y - g.chin) / 0.25, 0.4, 1)
    s = s * (1 - 0.22 * below)
    rng = np.random.default_rng(seed)
    s = s + rng.normal(0, 0.012, size=s.shape).astype(np.float32)  # pores
    base = np.asarray(g.skin, np.float32) / 255
    field = s[..., None] * base
    warm = 0.06 * (
        _gauss(c, g.cx - g.fw * 0.55, g.nose_y - 0.015, 0.035, 0.03)
        + _gauss(c, g.cx + g.fw * 0.55, g.nose_y - 0.015, 0.035, 0.03)
    )
    field[..., 0] += warm * base[0]
    field[..., 2] -= warm * base[2] * 0.5
    return np.clip(field, 0, 1).astype(np.float32)


def background(c: Canvas) -> Layer:
    """Plain white backdrop (the composite starts white; this layer only documents it)."""
    return c.layer()


def body(c: Canvas, g: FaceGeometry, skin: np.ndarray) -> Layer:
    """Neck, shoulders and a plain crew-neck top."""
    L = c.layer()
    cx, nw, sy, sw = g.cx, g.neck_w, g.shoulder_y, g.shoulder_w

    def neck(p: Pen) -> None:
        p.smooth(
            [
                (cx - nw, g.jaw_y - 0.02),
                (cx - nw * 1.02, sy - 0.08),
                (cx - nw * 1.6, sy - 0.01),
                (cx - sw * 0.8, sy + 0.02),
                (cx - sw, 1.2),
                (cx + sw, 1.2),
                (cx + sw * 0.8, sy + 0.02),
                (cx + nw * 1.6, sy - 0.01),
                (cx + nw * 1.02, sy - 0.08),
                (cx + nw, g.jaw_y - 0.02),
            ]
        )

    L.paint(c.mask(neck), skin * np.float32(0.9))
    L.paint(  # shadow the head casts on the neck
        c.mask(lambda p: p.ellipse(cx, g.jaw_y + 0.03, nw * 1.3, 0.06), blur=0.02),
        shade(g.skin, 0.7),
        0.4,
    )
    # neck side shading and collar-bone hints
    L.paint(
        c.mask(
            lambda p: [
                p.curve([(cx + s * nw * 0.9, g.jaw_y), (cx + s * nw, sy - 0.06)], 0.012)
                for s in (-1, 1)
            ],
            blur=0.01,
        ),
        shade(g.skin, 0.7),
        0.35,
    )
    if g.age > 0.6:
        L.paint(
            c.mask(
                lambda p: [
                    p.curve([(cx - nw * 0.6, y), (cx, y + 0.006), (cx + nw * 0.6, y)], 0.002)
                    for y in (g.chin + 0.05, g.chin + 0.08)
                ],
                blur=0.002,
            ),
            shade(g.skin, 0.65),
            0.35,
        )
    top = g.top_rgb

    def shirt(p: Pen) -> None:
        pts: list[Point] = [
            (cx - nw * 1.45, sy - 0.03),
            (cx - sw * 0.72, sy + 0.0),
            (cx - sw * 0.98, sy + 0.05),
            (cx - sw * 1.05, 1.2),
            (cx + sw * 1.05, 1.2),
            (cx + sw * 0.98, sy + 0.05),
            (cx + sw * 0.72, sy + 0.0),
            (cx + nw * 1.45, sy - 0.03),
        ]
        pts += bezier((cx + nw * 1.45, sy - 0.03), (cx, sy + 0.07), (cx - nw * 1.45, sy - 0.03))[
            1:-1
        ]
        p.poly(pts)

    shirt_m = c.mask(shirt)
    field = (
        np.asarray(top, np.float32)[None, None, :]
        / 255
        * (1.0 - 0.3 * np.clip(np.abs(c.X - cx) / sw, 0, 1.2) ** 2)[..., None]
    )
    L.paint(shirt_m, field.astype(np.float32))
    # collar rib and fold shadows
    L.paint(
        c.mask(
            lambda p: p.line(
                bezier((cx + nw * 1.45, sy - 0.03), (cx, sy + 0.07), (cx - nw * 1.45, sy - 0.03)),
                0.008,
            )
        ),
        shade(top, 0.75),
    )
    L.paint(
        c.mask(
            lambda p: [
                p.curve([(cx + s * sw * 0.55, sy + 0.03), (cx + s * sw * 0.5, 1.0)], 0.01)
                for s in (-1, 1)
            ],
            blur=0.012,
        ),
        shade(top, 0.7),
        0.5,
    )
    return L


def _ear(g: FaceGeometry, s: int) -> list[Point]:
    cx, fw, y0, y1, w = g.cx, g.fw, g.ear_y0, g.ear_y1, g.ear_w
    rel = [
        (-0.014, y0 + 0.012),
        (w * 0.45, y0 - 0.006),
        (w * 0.95, y0 + 0.012),
        (w * 0.85, (y0 + y1) / 2 + 0.005),
        (w * 0.5, y1 - 0.008),
        (w * 0.2, y1 + 0.004),
        (-0.01, y1 - 0.01),
    ]
    return [(cx + s * (fw - 0.006 + dx), y) for dx, y in rel]


def head(c: Canvas, g: FaceGeometry, skin: np.ndarray) -> Layer:
    """Ears, the shaded face shape, ageing lines, and body-type fullness."""
    L = c.layer()
    for s in (-1, 1):
        ear = _ear(g, s)
        L.paint(c.mask(lambda p, e=ear: p.smooth(e)), shade(g.skin, 0.8))
        L.paint(
            c.mask(lambda p, e=ear: p.smooth([(x - s * 0.003, y + 0.002) for x, y in e])),
            skin * np.float32(0.95),
        )
        cx, fw, y0, y1, w = g.cx, g.fw, g.ear_y0, g.ear_y1, g.ear_w
        helix = [
            (cx + s * (fw + w * 0.25), y0 + 0.006),
            (cx + s * (fw + w * 0.72), y0 + 0.012),
            (cx + s * (fw + w * 0.62), (y0 + y1) / 2 + 0.004),
            (cx + s * (fw + w * 0.3), y1 - 0.014),
        ]
        L.paint(c.mask(lambda p, h=helix: p.curve(h, 0.004), blur=0.002), shade(g.skin, 0.62), 0.6)
        L.paint(
            c.mask(
                lambda p: p.ellipse(cx + s * (fw + w * 0.2), (y0 + y1) / 2, w * 0.18, 0.016),
                blur=0.004,
            ),
            shade(g.skin, 0.65),
            0.5,
        )
    outline = g.outline()
    L.paint(c.mask(lambda p: p.smooth(outline)), skin)
    if g.body > 0:  # double chin / fuller neck fold
        L.paint(
            c.mask(
                lambda p: p.curve(
                    [
                        (g.cx - g.chin_w * 1.6, g.chin - 0.005),
                        (g.cx, g.chin + 0.025),
                        (g.cx + g.chin_w * 1.6, g.chin - 0.005),
                    ],
                    0.004,
                ),
                blur=0.005,
            ),
            shade(g.skin, 0.72),
            0.45,
        )
    _age_lines(c, g, L)
    return L


def _age_lines(c: Canvas, g: FaceGeometry, L: Layer) -> None:
    if g.age <= 0:
        return
    a = 0.22 + 0.3 * g.age
    col = shade(g.skin, 0.66)
    cx = g.cx

    def lines(p: Pen) -> None:
        # nasolabial folds
        for s in (-1, 1):
            p.curve(
                [
                    (cx + s * g.nose_w * 1.15, g.nose_y - 0.012),
                    (cx + s * (g.nose_w * 1.55), g.nose_y + 0.02),
                    (cx + s * (g.mouth_w * 1.18), g.mouth_y + 0.012),
                ],
                0.0035,
            )
        if g.age >= 0.9:
            n = 3
            for i in range(n):
                y = g.brow_y - 0.03 - i * 0.017
                p.curve([(cx - 0.07, y + 0.004), (cx, y - 0.003), (cx + 0.07, y + 0.004)], 0.0025)
            for s in (-1, 1):
                ox = cx + s * (g.eye_dx + g.eye_w * 1.05)
                for k in (-1, 0, 1):
                    p.line(
                        [(ox, g.eye_y + k * 0.004), (ox + s * 0.016, g.eye_y + k * 0.011)], 0.0022
                    )
                # under-eye bags and marionette lines
                p.curve(
                    [
                        (cx + s * (g.eye_dx - g.eye_w * 0.7), g.eye_y + g.eye_h + 0.008),
                        (cx + s * g.eye_dx, g.eye_y + g.eye_h + 0.014),
                        (cx + s * (g.eye_dx + g.eye_w * 0.8), g.eye_y + g.eye_h + 0.006),
                    ],
                    0.0025,
                )
                p.curve(
                    [
                        (cx + s * g.mouth_w * 1.05, g.mouth_y + 0.008),
                        (cx + s * g.mouth_w * 1.2, g.mouth_y + 0.045),
                    ],
                    0.003,
                )
        else:
            y = g.brow_y - 0.035
            p.curve([(cx - 0.05, y + 0.003), (cx, y - 0.002), (cx + 0.05, y + 0.003)], 0.002)

    L.paint(c.mask(lines, blur=0.0025), col, a)
