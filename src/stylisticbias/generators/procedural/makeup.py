"""Makeup (light / heavy) and lip makeup (neutral / red / bold)."""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).
# ruff: noqa: B023

from __future__ import annotations

from stylisticbias.generators.procedural.canvas import Canvas, Layer, Pen
from stylisticbias.generators.procedural.face_features import (
    eye_points,
    lips_mask_points,
    mouth_line,
)
from stylisticbias.generators.procedural.geometry import FaceGeometry

LIP_COLOURS = {
    "Neutral": ((196, 128, 118), 0.7),
    "Red lipstick": ((184, 16, 36), 0.93),
    "Bold": ((132, 22, 128), 0.93),
}


def makeup(c: Canvas, g: FaceGeometry, kind: str | None) -> Layer:
    """Eyeshadow, eyeliner, lashes and blush; heavy adds a smoky lid, a wing and contour."""
    L = c.layer()
    if kind is None:
        return L
    heavy = kind == "Heavy"
    if kind not in ("Light", "Heavy"):
        raise ValueError(f"unknown makeup {kind!r}; valid: Light, Heavy")
    shadow_col = (92, 52, 96) if heavy else (186, 132, 112)
    for s in (-1, 1):
        upper, lower = eye_points(g, s)
        lift = 0.022 if heavy else 0.012

        def lid(p: Pen, u=upper, lo=lower, lift=lift) -> None:
            top = [
                (x, y - lift * (1 - abs(2 * i / (len(u) - 1) - 1) * 0.5))
                for i, (x, y) in enumerate(u)
            ]
            p.poly(u + top[::-1])

        L.paint(c.mask(lid, blur=0.005 if heavy else 0.006), shadow_col, 0.7 if heavy else 0.35)
        liner = 0.0065 if heavy else 0.0035
        L.paint(c.mask(lambda p, u=upper: p.line(u, liner)), (16, 10, 12))
        ox, oy = upper[-1]
        wing = 0.018 if heavy else 0.006
        L.paint(
            c.mask(
                lambda p, ox=ox, oy=oy, w=wing: p.poly(
                    [
                        (ox - s * 0.008, oy - 0.002),
                        (ox + s * w, oy - w * 0.6),
                        (ox - s * 0.002, oy + 0.002),
                    ]
                )
            ),
            (16, 10, 12),
        )

        def lashes(p: Pen, u=upper) -> None:
            n = 7 if heavy else 4
            for k in range(n):
                x, y = u[3 + k * (len(u) - 5) // n]
                ln = 0.008 if heavy else 0.005
                p.line([(x, y), (x + s * ln * 0.4, y - ln)], 0.0018 if heavy else 0.0013)

        L.paint(c.mask(lashes), (16, 10, 12))
        if heavy:
            L.paint(c.mask(lambda p, lo=lower: p.line(lo[2:], 0.003)), (30, 16, 30), 0.9)
        # blush
        bx, by = g.cx + s * g.fw * 0.58, g.nose_y - 0.012
        L.paint(
            c.mask(lambda p, bx=bx, by=by: p.ellipse(bx, by, 0.04, 0.025), blur=0.016),
            (222, 90, 110),
            0.55 if heavy else 0.3,
        )
        if heavy:  # contour and highlight
            L.paint(
                c.mask(
                    lambda p: p.line(
                        [
                            (g.cx + s * g.fw * 0.92, g.eye_y + 0.03),
                            (g.cx + s * g.fw * 0.55, g.nose_y + 0.02),
                        ],
                        0.014,
                    ),
                    blur=0.01,
                ),
                (110, 70, 60),
                0.3,
            )
            L.paint(
                c.mask(
                    lambda p, bx=bx: p.ellipse(
                        bx + s * 0.006, g.eye_y + g.eye_h + 0.02, 0.022, 0.007
                    ),
                    blur=0.006,
                ),
                (255, 245, 235),
                0.35,
            )
    if heavy:  # defined brows
        for s in (-1, 1):
            ex = g.cx + s * g.eye_dx
            L.paint(
                c.mask(
                    lambda p, ex=ex: p.curve(
                        [
                            (ex - s * g.brow_w * 0.55, g.brow_y + 0.005),
                            (ex + s * g.brow_w * 0.25, g.brow_y - g.brow_arch * 1.1 + 0.003),
                            (ex + s * g.brow_w * 0.8, g.brow_y + 0.009),
                        ],
                        0.006,
                    )
                ),
                (40, 26, 22),
                0.6,
            )
    return L


def lips(c: Canvas, g: FaceGeometry, kind: str | None) -> Layer:
    """Lipstick over the lips with a gloss highlight; the mouth line stays drawn on top."""
    L = c.layer()
    if kind is None:
        return L
    if kind not in LIP_COLOURS:
        raise ValueError(f"unknown lip makeup {kind!r}; valid: {', '.join(LIP_COLOURS)}")
    col, a = LIP_COLOURS[kind]
    L.paint(c.mask(lambda p: p.poly(lips_mask_points(g))), col, a)
    L.paint(
        c.mask(
            lambda p: p.ellipse(
                g.cx + 0.008, g.mouth_y + g.lip_lo * 0.5, g.mouth_w * 0.3, g.lip_lo * 0.22
            ),
            blur=0.002,
        ),
        (255, 255, 255),
        0.45 if kind == "Neutral" else 0.3,
    )
    L.paint(c.mask(lambda p: p.line(mouth_line(g), 0.0025)), tuple(v * 0.4 for v in col), 0.9)  # type: ignore[arg-type]
    return L
