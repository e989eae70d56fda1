"""Eyewear, piercings and headwear (cap, beanie, hat, headscarf).

Headwear is drawn in ``headwear`` and re-exported here.
"""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).
# ruff: noqa: B023, E501

from __future__ import annotations

from stylisticbias.generators.procedural import palette
from stylisticbias.generators.procedural.canvas import Canvas, Layer, Pen, bezier, shade
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point
from stylisticbias.generators.procedural.headwear import HEADWEAR_COLOURS, catmull, headwear

__all__ = ["HEADWEAR_COLOURS", "catmull", "eyewear", "headwear", "piercings"]


def eyewear(c: Canvas, g: FaceGeometry, kind: str | None) -> Layer:
    """Thick-rimmed frames, thin metal frames, or sunglasses."""
    L = c.layer()
    if kind is None:
        return L
    if kind not in ("Thick-rimmed", "Thin metal", "Sunglasses"):
        raise ValueError(f"unknown eyewear {kind!r}; valid: Thick-rimmed, Thin metal, Sunglasses")
    thick = kind == "Thick-rimmed"
    sun = kind == "Sunglasses"
    hw = g.eye_w * (1.55 if not sun else 1.7)
    hh = g.eye_w * (1.05 if thick else (1.2 if sun else 1.15))
    rad = hh * (0.35 if thick else (0.6 if sun else 1.0))
    width = 0.011 if thick else (0.006 if sun else 0.0026)
    frame = (
        (30, 26, 26)
        if thick
        else ((24, 24, 28) if sun else palette.METAL_GOLD if g.accent % 2 else palette.METAL_SILVER)
    )
    ey = g.eye_y + 0.002
    for s in (-1, 1):
        ex = g.cx + s * (g.eye_dx + 0.003)
        if sun:
            L.paint(
                c.mask(lambda p, ex=ex: p.rect(ex - hw, ey - hh, ex + hw, ey + hh, radius=rad)),
                (28, 30, 38),
                0.93,
            )
            L.paint(
                c.mask(
                    lambda p, ex=ex: p.poly(
                        [
                            (ex - hw * 0.6, ey - hh * 0.8),
                            (ex - hw * 0.2, ey - hh * 0.8),
                            (ex - hw * 0.7, ey + hh * 0.6),
                            (ex - hw * 0.95, ey + hh * 0.3),
                        ]
                    ),
                    blur=0.004,
                ),
                (200, 210, 230),
                0.25,
            )
        else:
            L.paint(
                c.mask(lambda p, ex=ex: p.rect(ex - hw, ey - hh, ex + hw, ey + hh, radius=rad)),
                (230, 240, 250),
                0.12,
            )
        L.paint(
            c.mask(
                lambda p, ex=ex: p.rounded_outline(ex - hw, ey - hh, ex + hw, ey + hh, rad, width)
            ),
            frame,
        )
        # temple arm towards the ear
        x_out = g.cx + s * (g.eye_dx + 0.003 + hw)
        L.paint(
            c.mask(
                lambda p, x_out=x_out: p.line(
                    [(x_out, ey - hh * 0.6), (g.cx + s * (g.fw + 0.004), g.ear_y0 + 0.012)],
                    width * 0.8,
                )
            ),
            frame,
        )
    bridge = bezier(
        (g.cx - g.eye_dx + hw - 0.003, ey - hh * 0.3),
        (g.cx, ey - hh * 0.7),
        (g.cx + g.eye_dx - hw + 0.003, ey - hh * 0.3),
        8,
    )
    L.paint(c.mask(lambda p: p.line(bridge, width * 0.9)), frame)
    if thick:
        L.paint(
            c.mask(
                lambda p: [
                    p.line(
                        [
                            (g.cx + s * (g.eye_dx - hw * 0.7), ey - hh + 0.002),
                            (g.cx + s * (g.eye_dx + hw * 0.3), ey - hh + 0.002),
                        ],
                        0.002,
                    )
                    for s in (-1, 1)
                ]
            ),
            (120, 110, 110),
            0.6,
        )
    return L


def _stud(p: Pen, x: float, y: float, r: float) -> None:
    p.ellipse(x, y, r, r)


def piercings(c: Canvas, g: FaceGeometry, kind: str | None) -> Layer:
    """Nose stud, lip ring, eyebrow barbell, several at once, or earrings."""
    L = c.layer()
    if kind is None:
        return L
    metal = palette.METAL_SILVER
    hi = (255, 255, 255)
    s = 1 if g.accent % 2 else -1
    nose = (g.cx + s * g.nose_w * 0.72, g.nose_y - 0.01)
    lip = (g.cx + s * g.mouth_w * 0.45, g.mouth_y + g.lip_lo * 0.9)
    bx = g.cx + s * (g.eye_dx + g.brow_w * 0.55)
    brow = [(bx, g.brow_y - 0.011), (bx + s * 0.002, g.brow_y + 0.016)]
    lobes = [(g.cx + t * (g.fw + g.ear_w * 0.35), g.ear_y1 - 0.004) for t in (-1, 1)]

    def shiny(items: list[tuple[str, Point, float]]) -> None:
        for kind_, (x, y), r in items:
            if kind_ == "stud":
                L.paint(c.mask(lambda p, x=x, y=y, r=r: _stud(p, x, y, r)), metal)
                L.paint(
                    c.mask(lambda p, x=x, y=y, r=r: _stud(p, x - r * 0.3, y - r * 0.3, r * 0.4)),
                    hi,
                    0.9,
                )
            elif kind_ == "ring":
                L.paint(
                    c.mask(lambda p, x=x, y=y, r=r: p.arc(x, y + r * 0.6, r, r, 300, 240, 0.0032)),
                    shade(metal, 0.8),
                )
            elif kind_ == "hoop":
                L.paint(
                    c.mask(lambda p, x=x, y=y, r=r: p.ring(x, y + r, r * 0.8, r, 0.0035)),
                    palette.METAL_GOLD,
                )
            elif kind_ == "drop":
                L.paint(
                    c.mask(lambda p, x=x, y=y, r=r: p.line([(x, y), (x, y + r)], 0.0025)),
                    palette.METAL_GOLD,
                )
                L.paint(
                    c.mask(lambda p, x=x, y=y, r=r: p.ellipse(x, y + r + 0.007, 0.006, 0.008)),
                    (60, 140, 190),
                )

    if kind == "Single nose":
        shiny([("stud", nose, 0.0075)])
    elif kind == "Single lip":
        shiny([("ring", lip, 0.009)])
    elif kind == "Single eyebrow":
        shiny([("stud", brow[0], 0.0042), ("stud", brow[1], 0.0042)])
        L.paint(c.mask(lambda p: p.line(brow, 0.0018)), shade(metal, 0.7), 0.8)
    elif kind == "Multiple":
        ear = g.cx + s * (g.fw + g.ear_w * 0.75)
        shiny(
            [
                ("ring", (g.cx, g.nose_y + 0.001), 0.006),
                ("stud", brow[0], 0.0038),
                ("stud", brow[1], 0.0038),
                ("stud", lip, 0.0045),
                ("stud", (ear, g.ear_y0 + 0.012), 0.0036),
                ("stud", (ear + s * 0.002, g.ear_y0 + 0.026), 0.0036),
                ("stud", (ear, g.ear_y0 + 0.04), 0.0036),
                *[("hoop", xy, 0.011) for xy in lobes],
            ]
        )
    elif kind == "Earrings":
        if g.accent % 3 == 0:
            shiny([("drop", xy, 0.02) for xy in lobes])
        else:
            shiny([("hoop", xy, 0.02) for xy in lobes])
        shiny([("stud", xy, 0.004) for xy in lobes])
    else:
        raise ValueError(
            f"unknown piercing {kind!r}; valid: Single nose, Single lip, Single eyebrow, Multiple, Earrings"
        )
    return L
