"""The bare base face: background, neck and shoulders, shaded head with ears, facial features."""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).
# ruff: noqa: B023

from __future__ import annotations

import numpy as np

from stylisticbias.generators.procedural.canvas import Canvas, Layer, Pen, bezier, shade
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point


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


def eye_points(g: FaceGeometry, s: int) -> tuple[list[Point], list[Point]]:
    """Upper and lower lid curves of one eye (inner corner first)."""
    ex, ey, w, h = g.cx + s * g.eye_dx, g.eye_y, g.eye_w, g.eye_h
    inner = (ex - s * w * 0.95, ey + 0.002)
    outer = (ex + s * w, ey - 0.003)
    upper = bezier(inner, (ex + s * w * 0.05, ey - h * 2.0), outer, 18)
    lower = bezier(inner, (ex + s * w * 0.1, ey + h * 1.3), outer, 18)
    return upper, lower


def features(c: Canvas, g: FaceGeometry) -> Layer:
    """Eyes (sclera, iris, pupil, lids, catchlights), brows, nose and mouth."""
    L = c.layer()
    cx = g.cx
    dark = (38, 28, 26)
    for s in (-1, 1):
        ex, ey = g.cx + s * g.eye_dx, g.eye_y
        upper, lower = eye_points(g, s)
        sclera = c.mask(lambda p, u=upper, lo=lower: p.poly(u + lo[::-1]))
        sclera_full = c.full(sclera)
        # lid crease and socket shadow
        L.paint(
            c.mask(
                lambda p, u=upper: p.curve([(x, y - 0.011) for x, y in u[2:-2:3]], 0.005),
                blur=0.004,
            ),
            shade(g.skin, 0.72),
            0.45,
        )
        L.paint(sclera, (236, 232, 228))
        L.paint(
            c.mask(lambda p, u=upper: p.line(u, 0.006), blur=0.003).times(sclera_full),
            (150, 140, 140),
            0.5,
        )
        r = g.eye_h * 1.05
        icx, icy = ex + s * 0.001, ey + 0.001
        L.paint(c.mask(lambda p: p.ellipse(icx, icy, r, r)).times(sclera_full), g.iris)
        L.paint(
            c.mask(lambda p: p.ellipse(icx, icy + r * 0.35, r * 0.7, r * 0.5), blur=0.003).times(
                sclera_full
            ),
            shade(g.iris, 1.35),
            0.45,
        )
        L.paint(
            c.mask(lambda p: p.ring(icx, icy, r, r, 0.0022)).times(sclera_full),
            shade(g.iris, 0.5),
            0.8,
        )
        L.paint(
            c.mask(lambda p: p.ellipse(icx, icy, r * 0.42, r * 0.42)).times(sclera_full),
            (16, 12, 12),
        )
        L.paint(
            c.mask(lambda p: p.ellipse(icx - r * 0.35, icy - r * 0.4, r * 0.2, r * 0.2)),
            (255, 255, 255),
            0.9,
        )
        lid_w = 0.0055 if not g.male else 0.0045
        L.paint(c.mask(lambda p, u=upper: p.line(u, lid_w)), dark)
        L.paint(
            c.mask(lambda p, lo=lower: p.line(lo[3:], 0.002), blur=0.001), shade(g.skin, 0.55), 0.55
        )
        if not g.male:  # a few lashes at the outer corner

            def lashes(p: Pen, u: list[Point] = upper) -> None:
                for k in (-1, -3, -5):
                    x, y = u[k]
                    p.line([(x, y), (x + s * 0.006, y - 0.006)], 0.0016)

            L.paint(c.mask(lashes), dark)
        # eyebrow: thick inner end tapering to the tail
        bw, by, t, arch = g.brow_w, g.brow_y, g.brow_thick, g.brow_arch
        top_pts = [
            (ex - s * bw * 0.6, by + 0.002),
            (ex - s * bw * 0.1, by - arch * 0.8),
            (ex + s * bw * 0.35, by - arch * 1.1),
            (ex + s * bw * 0.8, by + 0.008),
        ]
        bot_pts = [
            (ex + s * bw * 0.8, by + 0.009),
            (ex + s * bw * 0.35, by - arch * 1.1 + t * 0.7),
            (ex - s * bw * 0.1, by - arch + t),
            (ex - s * bw * 0.6, by + 0.002 + t * 1.1),
        ]
        L.paint(
            c.mask(lambda p, a=top_pts, b=bot_pts: p.smooth(a + b), blur=0.0012), g.brow_rgb, 0.92
        )
    # nose
    nw, ny = g.nose_w, g.nose_y

    def bridge(p: Pen) -> None:
        for s in (-1, 1):
            p.curve(
                [
                    (cx + s * 0.014, g.eye_y + 0.005),
                    (cx + s * 0.013, ny - 0.04),
                    (cx + s * nw * 0.75, ny - 0.018),
                ],
                0.006,
            )

    L.paint(c.mask(bridge, blur=0.006), shade(g.skin, 0.72), 0.4)
    L.paint(
        c.mask(lambda p: p.ellipse(cx, ny - 0.003, nw * 0.6, 0.006), blur=0.005),
        shade(g.skin, 0.7),
        0.45,
    )
    for s in (-1, 1):
        L.paint(
            c.mask(
                lambda p: p.arc(
                    cx + s * nw * 0.62,
                    ny - 0.008,
                    nw * 0.38,
                    0.01,
                    200 if s < 0 else -20,
                    20 if s > 0 else 340,
                    0.0028,
                ),
                blur=0.0015,
            ),
            shade(g.skin, 0.55),
            0.55,
        )
        L.paint(
            c.mask(
                lambda p: p.ellipse(cx + s * nw * 0.38, ny - 0.0015, nw * 0.22, 0.0042), blur=0.001
            ),
            shade(g.skin, 0.38),
            0.85,
        )
    L.paint(
        c.mask(lambda p: p.ellipse(cx, ny - 0.016, 0.008, 0.006), blur=0.004), (255, 250, 245), 0.3
    )
    # mouth
    L.paint(lips_mask(c, g), g.lip)
    my, mw = g.mouth_y, g.mouth_w
    L.paint(
        c.mask(lambda p: p.poly(upper_lip(g)), blur=0.001),
        shade(g.lip, 0.86),
    )
    L.paint(
        c.mask(
            lambda p: p.ellipse(cx, my + g.lip_lo * 0.45, mw * 0.35, g.lip_lo * 0.25), blur=0.003
        ),
        (255, 240, 235),
        0.22,
    )
    L.paint(c.mask(lambda p: p.line(mouth_line(g), 0.0028)), shade(g.lip, 0.45))
    L.paint(  # shadow under the lower lip and philtrum
        c.mask(lambda p: p.ellipse(cx, my + g.lip_lo + 0.009, mw * 0.45, 0.005), blur=0.004),
        shade(g.skin, 0.72),
        0.4,
    )
    L.paint(
        c.mask(
            lambda p: p.line([(cx, ny + 0.006), (cx, my - g.lip_up - 0.002)], 0.006), blur=0.003
        ),
        shade(g.skin, 0.8),
        0.3,
    )
    return L


def mouth_line(g: FaceGeometry) -> list[Point]:
    """The line between the lips, corner to corner."""
    cx, my, mw = g.cx, g.mouth_y, g.mouth_w
    return [
        (cx - mw, my),
        (cx - mw * 0.5, my + 0.001),
        (cx, my + 0.0025),
        (cx + mw * 0.5, my + 0.001),
        (cx + mw, my),
    ]


def upper_lip(g: FaceGeometry) -> list[Point]:
    """Upper-lip polygon with a cupid's bow."""
    cx, my, mw, u = g.cx, g.mouth_y, g.mouth_w, g.lip_up
    top = [
        (cx - mw, my),
        (cx - mw * 0.6, my - u * 0.7),
        (cx - mw * 0.25, my - u),
        (cx, my - u * 0.72),
        (cx + mw * 0.25, my - u),
        (cx + mw * 0.6, my - u * 0.7),
        (cx + mw, my),
    ]
    return top + mouth_line(g)[::-1]


def lips_mask_points(g: FaceGeometry) -> list[Point]:
    """Both lips as one closed outline."""
    cx, my, mw, lo = g.cx, g.mouth_y, g.mouth_w, g.lip_lo
    lower = bezier((cx + mw, my), (cx, my + lo * 2.0), (cx - mw, my), 20)
    return upper_lip(g)[:7] + lower[1:]


def lips_mask(c: Canvas, g: FaceGeometry):
    """Coverage of the lips."""
    return c.mask(lambda p: p.poly(lips_mask_points(g)))
