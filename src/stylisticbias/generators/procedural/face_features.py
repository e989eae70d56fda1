"""Facial features of the base face: eyes and brows, nose, lips and mouth (and their outlines,
which the makeup and facial-hair layers reuse).
"""

# Drawing lambdas run at once inside their loop (B023 is a false positive).
# ruff: noqa: B023

from __future__ import annotations

from stylisticbias.generators.procedural.canvas import Canvas, Layer, Mask, Pen, bezier, shade
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point


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


def lips_mask(c: Canvas, g: FaceGeometry) -> Mask:
    """Coverage of the lips."""
    return c.mask(lambda p: p.poly(lips_mask_points(g)))
