"""Fashion styles of everyday and statement wear: casual, sporty, streetwear, outdoor, worn,
daring.

Each style function draws one outfit with an :class:`Outfit` of the full-body figure.
"""

# Drawing lambdas run at once inside their loop (B023 is a false positive).

from __future__ import annotations

import numpy as np

from stylisticbias.generators.procedural.canvas import Pen, mix, shade
from stylisticbias.generators.procedural.garments import DENIM, RGB, WHITE, Outfit, tones


def casual(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Casual."""
    f = o.f
    tee = tones(
        rng, [(200, 60, 50), (60, 130, 90), (240, 240, 235), (230, 180, 60), (90, 120, 190)]
    )
    o.trousers(DENIM)
    o.top(tee, bottom=f.hip_y + 0.02, sleeve="short")
    o.shoes(WHITE, kind="sneaker")


def sporty(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Sporty / Athletic wear."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    main = tones(rng, [(200, 40, 40), (30, 90, 170), (30, 30, 34), (40, 150, 120)])
    pants = o.trousers((34, 34, 40), extra=0.004)
    o.within(
        pants,
        lambda p: [
            p.line(
                [
                    (cx + s * (f.hip_w + 0.005), f.hip_y - 0.05),
                    (cx + s * (0.055 + f.calf_w + 0.02), f.ankle_y),
                ],
                0.008,
            )
            for s in (-1, 1)
        ],
        WHITE,
    )
    jacket = o.top(main, bottom=f.hip_y, extra=0.004)
    o.within(jacket, lambda p: [p.line(f.arm(s), 0.008) for s in (-1, 1)], WHITE)
    o.paint(lambda p: p.line([(cx, sy - 0.02), (cx, f.hip_y)], 0.004), (200, 200, 200))
    o.shoes((240, 240, 240), kind="sneaker")


def streetwear(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Streetwear."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    hoodie = tones(rng, [(30, 30, 34), (80, 90, 60), (150, 150, 155), (60, 40, 90)])
    pants = o.trousers((90, 86, 70), extra=0.03)
    o.within(
        pants,
        lambda p: [
            p.rect(
                cx + s * (0.055 + f.thigh_w + 0.03) - 0.03,
                f.crotch_y + 0.1,
                cx + s * (0.055 + f.thigh_w + 0.03) + 0.03,
                f.crotch_y + 0.2,
                radius=0.006,
            )
            for s in (-1, 1)
        ],
        shade((90, 86, 70), 0.75),
    )
    body = o.top(hoodie, bottom=f.hip_y + 0.06, extra=0.03)
    o.paint(lambda p: p.ellipse(cx, sy - 0.005, f.neck_w * 2.4, 0.035), shade(hoodie, 0.75))
    o.within(
        body,
        lambda p: p.rect(cx - 0.07, sy + 0.1, cx + 0.07, sy + 0.2, radius=0.01),
        (230, 200, 40),
    )
    o.within(body, lambda p: p.ellipse(cx, sy + 0.15, 0.04, 0.035), (220, 60, 60))
    o.within(
        body,
        lambda p: p.rect(cx - 0.08, f.hip_y - 0.04, cx + 0.08, f.hip_y + 0.02, radius=0.01),
        shade(hoodie, 0.8),
    )
    o.paint(lambda p: p.arc(cx, sy + 0.02, f.neck_w * 1.6, 0.1, 20, 160, 0.004), (220, 180, 60))
    o.shoes((245, 245, 245), kind="boot")


def outdoor(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Functional / outdoor wear."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    shell = tones(rng, [(220, 110, 30), (70, 90, 60), (40, 90, 140)])
    pants = o.trousers((90, 94, 80), extra=0.014)
    o.within(
        pants,
        lambda p: [
            p.rect(
                cx + s * (0.055 + f.thigh_w) - 0.028,
                f.crotch_y + 0.12,
                cx + s * (0.055 + f.thigh_w) + 0.02,
                f.crotch_y + 0.22,
                radius=0.005,
            )
            for s in (-1, 1)
        ],
        shade((90, 94, 80), 0.75),
    )
    jacket = o.top(shell, bottom=f.hip_y + 0.04, extra=0.014)
    o.paint(lambda p: p.line([(cx, sy - 0.02), (cx, f.hip_y + 0.04)], 0.005), (40, 40, 40))
    o.within(
        jacket,
        lambda p: [p.rect(cx + s * 0.03, sy + 0.08, cx + s * 0.1, sy + 0.15) for s in (-1, 1)],
        shade(shell, 0.8),
    )
    o.paint(lambda p: p.ellipse(cx, sy - 0.01, f.neck_w * 2.2, 0.03), shade(shell, 0.85))
    o.paint(
        lambda p: [
            p.line(
                [
                    (cx + s * f.neck_w * 2.0, sy),
                    (cx + s * (f.chest_w - 0.02), f.waist_y - 0.05),
                ],
                0.018,
            )
            for s in (-1, 1)
        ],
        (40, 44, 48),
    )
    o.paint(
        lambda p: p.line(
            [(cx - f.chest_w + 0.03, sy + 0.17), (cx + f.chest_w - 0.03, sy + 0.17)], 0.01
        ),
        (40, 44, 48),
    )
    o.shoes((110, 74, 44), kind="boot")


def worn(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Worn / Distressed clothing."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    tee = mix(tones(rng, [(120, 110, 100), (90, 100, 90), (110, 90, 80)]), (200, 200, 190), 0.3)
    jeans = mix(DENIM, (170, 180, 190), 0.35)
    pants = o.trousers(jeans)
    top = o.top(tee, bottom=f.hip_y + 0.03, sleeve="short")
    skin = shade(o_skin(skin), 1.0)

    def rips(p: Pen, spots: list[tuple[float, float, float]]) -> None:
        for x, y, r in spots:
            p.poly(
                [
                    (x - r, y),
                    (x - r * 0.3, y - r * 0.5),
                    (x + r, y - r * 0.1),
                    (x + r * 0.4, y + r * 0.5),
                ]
            )

    knees = [(cx + s * 0.06, f.knee_y, 0.028) for s in (-1, 1)] + [
        (cx - 0.07, f.crotch_y + 0.12, 0.018)
    ]
    o.within(pants, lambda p: rips(p, knees), skin)
    o.within(
        pants,
        lambda p: [
            p.line([(x - r, y + dy), (x + r, y + dy)], 0.003)
            for x, y, r in knees
            for dy in (-0.02, 0.025)
        ],
        WHITE,
        0.8,
    )
    holes = [
        (cx + 0.05, sy + 0.12, 0.015),
        (cx - 0.06, f.waist_y - 0.02, 0.02),
        (cx + 0.08, f.hip_y, 0.014),
    ]
    o.within(top, lambda p: rips(p, holes), skin)
    stains = [
        (cx - 0.03, sy + 0.2, 0.03),
        (cx + 0.05, f.waist_y + 0.05, 0.022),
        (cx + 0.07, f.crotch_y + 0.25, 0.03),
    ]
    o.within(
        np.maximum(top, pants),
        lambda p: [p.ellipse(x, y, r, r * 0.7) for x, y, r in stains],
        (110, 84, 50),
        0.5,
        blur=0.006,
    )
    o.within(
        top,
        lambda p: [
            p.line([(x, f.hip_y + 0.03), (x + 0.004, f.hip_y + 0.045)], 0.003)
            for x in np.arange(cx - 0.15, cx + 0.15, 0.012)
        ],
        shade(tee, 0.7),
    )
    o.shoes((80, 70, 60), kind="sneaker")
    o.paint(
        lambda p: [p.ellipse(cx + s * 0.06, f.foot_y - 0.02, 0.02, 0.01) for s in (-1, 1)],
        (60, 50, 40),
        0.6,
        blur=0.005,
    )


def daring(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Daring / Provocative."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    male = f.male
    if male:
        o.trousers((20, 20, 22), extra=-0.004)
        o.stripes(o.trousers((20, 20, 22), extra=-0.004), (70, 70, 80), 0.06, 0.004)
        top = o.top((16, 16, 18), bottom=f.hip_y, sleeve="long")
        o.paint(
            lambda p: p.poly(
                [
                    (cx - f.neck_w * 1.5, sy - 0.02),
                    (cx + f.neck_w * 1.5, sy - 0.02),
                    (cx + 0.02, f.waist_y - 0.02),
                    (cx - 0.02, f.waist_y - 0.02),
                ]
            ),
            shade(skin, 0.95),
        )
        o.within(
            top,
            lambda p: [
                p.line(
                    [(cx + s * f.neck_w * 1.5, sy - 0.02), (cx + s * 0.02, f.waist_y - 0.02)],
                    0.004,
                )
                for s in (-1, 1)
            ],
            (60, 60, 70),
        )
        o.shoes((20, 20, 20), kind="boot")
    else:
        red = (200, 20, 40)
        o.top(red, bottom=f.crotch_y + 0.08, sleeve="none", extra=-0.004)
        o.paint(
            lambda p: p.poly(
                [
                    (cx - f.neck_w * 1.4, sy - 0.02),
                    (cx + f.neck_w * 1.4, sy - 0.02),
                    (cx, sy + 0.12),
                ]
            ),
            shade(skin, 0.95),
        )
        o.paint(
            lambda p: p.poly(
                [
                    (cx - f.hip_w, f.crotch_y + 0.02),
                    (cx + f.hip_w, f.crotch_y + 0.02),
                    (cx + f.hip_w + 0.01, f.crotch_y + 0.08),
                    (cx - f.hip_w - 0.01, f.crotch_y + 0.08),
                ]
            ),
            red,
        )
        o.paint(
            lambda p: [p.ellipse(cx + s * 0.04, f.waist_y - 0.03, 0.018, 0.03) for s in (-1, 1)],
            shade(skin, 0.95),
        )
        o.shoes((20, 20, 20), kind="heel")


def o_skin(skin: RGB) -> RGB:
    """Skin seen through rips."""
    return skin
