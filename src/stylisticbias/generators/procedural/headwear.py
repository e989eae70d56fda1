"""Headwear: cap, beanie, hat and headscarf drawn over the head."""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).

from __future__ import annotations

import numpy as np

from stylisticbias.generators.procedural.canvas import Canvas, Layer, Pen, bezier, mix, shade
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point

HEADWEAR_COLOURS = [
    (36, 52, 96),
    (150, 34, 40),
    (40, 40, 44),
    (54, 96, 64),
    (190, 150, 90),
    (96, 60, 110),
]


def _dome(g: FaceGeometry, grow: float, bottom: float, lift: float = 0.0) -> list[Point]:
    ry = g.eye_y - g.top
    out: list[Point] = []
    for deg in np.linspace(180, 360, 21):
        a = np.radians(deg)
        out.append((g.cx + (g.fw + grow) * np.cos(a), g.eye_y - lift + (ry + grow) * np.sin(a)))
    return [(out[0][0], bottom), *out, (out[-1][0], bottom)]


def headwear(c: Canvas, g: FaceGeometry, kind: str | None) -> Layer:
    """Cap, beanie, hat or headscarf (the headscarf also hides the hair, see ``Look.hair``)."""
    L = c.layer()
    if kind is None:
        return L
    col = HEADWEAR_COLOURS[g.accent % len(HEADWEAR_COLOURS)]
    cx, fw = g.cx, g.fw
    vol = g.hair_vol + 0.012
    band_y = g.hairline - 0.005
    if kind == "Cap":
        dome = _dome(g, vol + 0.004, band_y + 0.01)
        L.paint(c.mask(lambda p: p.smooth([*dome[1:-1], (cx, band_y + 0.016)])), col)
        L.paint(
            c.mask(
                lambda p: [
                    p.curve(
                        [(cx + k * fw * 0.35, band_y), (cx + k * fw * 0.3, g.top - vol + 0.01)],
                        0.0025,
                    )
                    for k in (-1, 0, 1)
                ]
            ),
            shade(col, 0.7),
            0.7,
        )
        L.paint(c.mask(lambda p: p.ellipse(cx, g.top - vol - 0.002, 0.008, 0.005)), shade(col, 0.8))
        brim = bezier(
            (cx - fw - 0.02, band_y + 0.005),
            (cx, band_y + 0.05),
            (cx + fw + 0.02, band_y + 0.005),
            16,
        )
        brim2 = bezier(
            (cx + fw + 0.015, band_y + 0.01),
            (cx, band_y + 0.085),
            (cx - fw - 0.015, band_y + 0.01),
            16,
        )
        L.paint(c.mask(lambda p: p.poly(brim + brim2)), shade(col, 0.85))
        L.paint(c.mask(lambda p: p.line(brim2, 0.004), blur=0.002), shade(col, 0.5), 0.8)
        L.paint(
            c.mask(lambda p: p.ellipse(cx, band_y - 0.03, 0.022, 0.016)),
            mix(col, (255, 255, 255), 0.75),
        )
        return L
    if kind == "Beanie":
        dome = _dome(g, vol + 0.006, band_y + 0.012, lift=0.01)
        top_m = c.mask(lambda p: p.smooth([*dome[1:-1], (cx, band_y)]))
        L.paint(top_m, col)
        L.paint(
            c.mask(
                lambda p: [
                    p.line([(cx + k * 0.014, band_y), (cx + k * 0.011, g.top - 0.03)], 0.003)
                    for k in range(-14, 15)
                ]
            ).times(c.full(top_m)),
            shade(col, 0.78),
            0.7,
        )
        cuff = [
            (cx - fw - vol - 0.01, band_y - 0.035),
            (cx + fw + vol + 0.01, band_y - 0.035),
            (cx + fw + vol + 0.008, band_y + 0.012),
            (cx - fw - vol - 0.008, band_y + 0.012),
        ]
        cm = c.mask(lambda p: p.poly(cuff))
        L.paint(cm, shade(col, 0.92))
        L.paint(
            c.mask(
                lambda p: [
                    p.line(
                        [(cx + k * 0.008, band_y - 0.035), (cx + k * 0.008, band_y + 0.012)], 0.003
                    )
                    for k in range(-30, 31)
                ]
            ).times(c.full(cm)),
            shade(col, 0.7),
            0.6,
        )
        L.paint(
            c.mask(lambda p: p.ellipse(cx, g.top - vol - 0.04, 0.03, 0.027)),
            mix(col, (255, 255, 255), 0.3),
        )
        return L
    if kind == "Hat":
        felt = (70, 56, 44) if g.accent % 2 else (48, 48, 54)
        brim_y = band_y - 0.01
        L.paint(c.mask(lambda p: p.ellipse(cx, brim_y, fw + 0.13, 0.035)), shade(felt, 0.85))
        crown = [
            (cx - fw - 0.015, brim_y),
            (cx - fw + 0.005, g.top - 0.06),
            (cx - 0.03, g.top - 0.075),
            (cx, g.top - 0.06),
            (cx + 0.03, g.top - 0.075),
            (cx + fw - 0.005, g.top - 0.06),
            (cx + fw + 0.015, brim_y),
        ]
        L.paint(c.mask(lambda p: p.poly([*catmull(crown), (cx, brim_y + 0.012)])), felt)
        L.paint(
            c.mask(
                lambda p: p.poly(
                    [
                        (cx - fw - 0.013, brim_y - 0.03),
                        (cx + fw + 0.013, brim_y - 0.03),
                        (cx + fw + 0.015, brim_y),
                        (cx - fw - 0.015, brim_y),
                    ]
                )
            ),
            (150, 40, 40) if g.accent % 2 else (190, 160, 110),
        )
        L.paint(
            c.mask(lambda p: p.arc(cx, brim_y, fw + 0.13, 0.035, 0, 180, 0.004), blur=0.002),
            shade(felt, 0.55),
            0.9,
        )
        return L
    if kind == "Headscarf":
        scarf = col if g.accent % 2 else (170, 140, 110)
        outer = [
            (cx - fw - 0.055, g.eye_y),
            (cx - fw - 0.04, g.top - 0.01),
            (cx, g.top - 0.05),
            (cx + fw + 0.04, g.top - 0.01),
            (cx + fw + 0.055, g.eye_y),
            (cx + fw + 0.05, g.jaw_y + 0.02),
            (cx + g.shoulder_w * 0.75, g.shoulder_y + 0.03),
            (cx + g.shoulder_w * 0.7, 1.05),
            (cx - g.shoulder_w * 0.7, 1.05),
            (cx - g.shoulder_w * 0.75, g.shoulder_y + 0.03),
            (cx - fw - 0.05, g.jaw_y + 0.02),
        ]
        opening = [
            (cx, g.hairline - 0.012),
            (cx + fw * 0.86, g.hairline + 0.02),
            (cx + fw * 0.9, g.eye_y + 0.02),
            (cx + fw * 0.78, g.jaw_y - 0.01),
            (cx + g.chin_w, g.chin - 0.006),
            (cx, g.chin + 0.006),
            (cx - g.chin_w, g.chin - 0.006),
            (cx - fw * 0.78, g.jaw_y - 0.01),
            (cx - fw * 0.9, g.eye_y + 0.02),
            (cx - fw * 0.86, g.hairline + 0.02),
        ]

        def shape(p: Pen) -> None:
            p.smooth(outer)
            p.smooth(opening, fill=0)

        L.paint(c.mask(shape), scarf)
        L.paint(
            c.mask(
                lambda p: [
                    p.curve(
                        [
                            (cx + s * (fw + 0.03), g.top + 0.05),
                            (cx + s * (fw + 0.02), g.jaw_y),
                            (cx + s * g.neck_w * 1.5, g.shoulder_y + 0.05),
                        ],
                        0.005,
                    )
                    for s in (-1, 1)
                ],
                blur=0.006,
            ),
            shade(scarf, 0.65),
            0.6,
        )
        L.paint(
            c.mask(
                lambda p: p.curve(
                    [
                        (cx - fw * 0.8, g.chin + 0.03),
                        (cx, g.chin + 0.06),
                        (cx + fw * 0.8, g.chin + 0.03),
                    ],
                    0.004,
                ),
                blur=0.004,
            ),
            shade(scarf, 0.65),
            0.6,
        )
        L.paint(
            c.mask(lambda p: p.curve(opening[-3:] + opening[:4], 0.006), blur=0.003),
            shade(scarf, 0.7),
            0.7,
        )
        return L
    raise ValueError(f"unknown headwear {kind!r}; valid: Cap, Beanie, Hat, Headscarf")


def catmull(pts: list[Point]) -> list[Point]:
    """Smooth open curve through ``pts``."""
    from stylisticbias.generators.procedural.canvas import catmull_rom

    return catmull_rom(pts, closed=False)
