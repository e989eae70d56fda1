"""Skin irregularities (freckles, acne, scars, moles) and facial tattoos."""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).

from __future__ import annotations

import numpy as np

from stylisticbias.generators.procedural import palette
from stylisticbias.generators.procedural.canvas import Canvas, Layer, Pen, shade
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point


def _spots(
    g: FaceGeometry,
    rng: np.random.Generator,
    n: int,
    zones: list[tuple[float, float, float, float]],
) -> list[Point]:
    """``n`` points spread over elliptical zones (cx, cy, rx, ry)."""
    pts = []
    for i in range(n):
        zx, zy, rx, ry = zones[i % len(zones)]
        a, r = rng.uniform(0, 2 * np.pi), np.sqrt(rng.uniform(0, 1))
        pts.append((zx + rx * r * np.cos(a), zy + ry * r * np.sin(a)))
    return pts


def _cheeks(g: FaceGeometry) -> list[tuple[float, float, float, float]]:
    y = (g.eye_y + g.nose_y) / 2 + 0.012
    return [
        (g.cx - g.fw * 0.55, y, g.fw * 0.28, 0.03),
        (g.cx + g.fw * 0.55, y, g.fw * 0.28, 0.03),
        (g.cx, g.eye_y + 0.045, 0.016, 0.022),
    ]


def marks(c: Canvas, g: FaceGeometry, kind: str | None) -> Layer:
    """The skin-irregularity layer (empty for the bare base face)."""
    L = c.layer()
    if kind is None:
        return L
    rng = np.random.default_rng(g.accent + 11)
    if kind == "Freckles":
        pts = _spots(g, rng, 90, _cheeks(g))
        col = shade(g.skin, 0.62)
        col = (col[0] * 1.05, col[1] * 0.9, col[2] * 0.75)
        L.paint(
            c.mask(
                lambda p: [
                    p.ellipse(x, y, r, r)
                    for (x, y), r in zip(pts, rng.uniform(0.0022, 0.0038, len(pts)))
                ]
            ),
            col,
            0.75,
        )
    elif kind == "Acne":
        brow, chin = (g.cx, g.brow_y - 0.05, 0.06, 0.015), (g.cx, g.chin - 0.03, 0.03, 0.012)
        zones = [*_cheeks(g)[:2], brow, chin]
        pts = _spots(g, rng, 36, zones)
        L.paint(
            c.mask(lambda p: [p.ellipse(x, y, 0.02, 0.015) for x, y in pts[::3]], blur=0.01),
            (200, 70, 70),
            0.25,
        )
        L.paint(
            c.mask(lambda p: [p.ellipse(x, y, 0.0055, 0.0055) for x, y in pts], blur=0.0015),
            (190, 60, 60),
            0.8,
        )
        L.paint(
            c.mask(lambda p: [p.ellipse(x, y - 0.001, 0.0017, 0.0017) for x, y in pts[::2]]),
            (250, 225, 200),
            0.75,
        )
    elif kind == "Scars":
        s = 1 if g.accent % 2 else -1
        x0, y0 = g.cx + s * g.fw * 0.35, g.nose_y - 0.025
        cut = [(x0, y0), (x0 + s * 0.03, y0 + 0.025), (x0 + s * 0.05, y0 + 0.055)]
        L.paint(c.mask(lambda p: p.curve(cut, 0.008), blur=0.002), shade(g.skin, 0.75), 0.55)
        L.paint(
            c.mask(lambda p: p.curve(cut, 0.0038)),
            (226, 160, 160) if g.skin[0] > 150 else shade(g.skin, 1.35),
            0.85,
        )

        def stitches(p: Pen) -> None:
            for t in (0.2, 0.45, 0.7):
                x, y = x0 + s * 0.05 * t, y0 + 0.055 * t
                p.line([(x - 0.006, y + s * 0.005 * 0), (x + 0.006, y - 0.004)], 0.0018)

        L.paint(c.mask(stitches), shade(g.skin, 0.6), 0.6)
        # a second small scar through the chin
        L.paint(
            c.mask(
                lambda p: p.line(
                    [(g.cx - s * 0.02, g.chin - 0.03), (g.cx - s * 0.004, g.chin - 0.012)], 0.003
                )
            ),
            shade(g.skin, 1.2),
            0.8,
        )
    elif kind == "Moles":
        spots = [
            (g.cx + g.fw * 0.45, g.nose_y + 0.01, 0.0075),
            (g.cx - g.mouth_w * 1.35, g.mouth_y - 0.012, 0.006),
            (g.cx - g.fw * 0.35, g.brow_y - 0.04, 0.0055),
            (g.cx + g.chin_w * 0.6, g.chin - 0.025, 0.0065),
        ]
        L.paint(
            c.mask(lambda p: [p.ellipse(x, y, r, r * 0.9) for x, y, r in spots], blur=0.001),
            (72, 46, 34),
            0.9,
        )
        L.paint(
            c.mask(
                lambda p: [
                    p.ellipse(x - r * 0.3, y - r * 0.3, r * 0.3, r * 0.3) for x, y, r in spots
                ],
                blur=0.001,
            ),
            (130, 100, 90),
            0.5,
        )
    else:
        raise ValueError(f"unknown skin irregularity {kind!r}; valid: Freckles, Acne, Scars, Moles")
    return L


def tattoo(c: Canvas, g: FaceGeometry, kind: str | None) -> Layer:
    """The facial-tattoo layer: line-work on one cheekbone and temple, stars under the eye."""
    L = c.layer()
    if kind is None:
        return L
    s = 1 if g.accent % 3 else -1
    ex = g.cx + s * g.eye_dx
    ink = palette.INK

    def lines(p: Pen) -> None:
        # a flowing tribal swirl from the temple down the cheekbone
        base_y = g.eye_y + g.eye_h + 0.018
        p.curve(
            [
                (ex + s * 0.045, g.brow_y - 0.01),
                (ex + s * 0.06, g.eye_y),
                (ex + s * 0.035, base_y + 0.01),
                (ex - s * 0.005, base_y + 0.012),
                (ex - s * 0.02, base_y + 0.035),
            ],
            0.0045,
        )
        p.curve(
            [
                (ex + s * 0.05, g.eye_y - 0.012),
                (ex + s * 0.072, g.eye_y + 0.02),
                (ex + s * 0.05, base_y + 0.035),
            ],
            0.0035,
        )
        for k in range(3):
            x = ex + s * (0.005 + 0.014 * k)
            y = base_y + 0.027 + 0.004 * k
            p.poly([(x, y - 0.008), (x + 0.0035, y), (x, y + 0.008), (x - 0.0035, y)])
        # teardrop under the other eye and a line of dots on the chin
        ox = g.cx - s * g.eye_dx
        ty = g.eye_y + g.eye_h + 0.02
        p.poly(
            [(ox, ty - 0.008), (ox + 0.005, ty + 0.004), (ox, ty + 0.009), (ox - 0.005, ty + 0.004)]
        )
        for k in range(-2, 3):
            p.ellipse(g.cx + k * 0.009, g.chin - 0.022 + 0.002 * abs(k), 0.0025, 0.0025)

    L.paint(c.mask(lines), ink, 0.82)
    return L
