"""Fashion styles built on tailoring: business formal, evening, smart casual, luxury, vintage.

Each style function draws one outfit with an :class:`Outfit` of the full-body figure.
"""

# Drawing lambdas run at once inside their loop (B023 is a false positive).

from __future__ import annotations

import numpy as np

from stylisticbias.generators.procedural.canvas import Pen, mix, shade
from stylisticbias.generators.procedural.garments import BLACK, RGB, WHITE, Outfit, tones


def business_formal(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Professional / Business formal."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    male = f.male
    suit = tones(rng, [(34, 44, 72), (52, 54, 60), (30, 30, 36)])
    shirt = WHITE if male else (232, 226, 236)
    if male:
        o.trousers(suit)
    else:
        o.skirt(suit, f.knee_y + 0.04, 0.0)
    o.top(suit, bottom=f.hip_y + 0.05)
    o.lapels(suit, shirt, 0.17)
    if male:
        o.tie(tones(rng, [(140, 30, 40), (40, 70, 130), (90, 90, 100)]), sy + 0.2)
    o.buttons(cx + 0.008, sy + 0.22, sy + 0.3, 2, shade(suit, 0.6))
    o.shoes(BLACK, kind="plain" if male else "heel")


def evening_wear(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Formal / Evening wear."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    male = f.male
    if male:
        o.trousers(BLACK)
        o.stripes(o.trousers(BLACK), (60, 60, 66), 2.0, 0.004)
        o.top(BLACK, bottom=f.hip_y + 0.03)
        o.lapels((10, 10, 12), WHITE, 0.2)
        o.paint(
            lambda p: p.poly([(cx - 0.028, sy + 0.005), (cx, sy + 0.015), (cx - 0.028, sy + 0.03)]),
            BLACK,
        )
        o.paint(
            lambda p: p.poly([(cx + 0.028, sy + 0.005), (cx, sy + 0.015), (cx + 0.028, sy + 0.03)]),
            BLACK,
        )
        o.buttons(cx, sy + 0.07, sy + 0.17, 3, BLACK, 0.004)
        o.shoes((12, 12, 14))
    else:
        gown = tones(rng, [(110, 20, 50), (20, 80, 70), (30, 30, 90)])
        top = o.top(gown, bottom=f.waist_y + 0.02, sleeve="none", neck="v")
        o.skirt(gown, f.foot_y + 0.005, 0.14)
        o.paint(
            lambda p: p.rect(
                cx - f.waist_w - 0.006,
                f.waist_y - 0.012,
                cx + f.waist_w + 0.006,
                f.waist_y + 0.014,
            ),
            (220, 190, 110),
        )
        o.within(
            top,
            lambda p: [
                p.line([(cx + s * 0.04, sy + 0.03), (cx + s * 0.06, f.waist_y)], 0.004)
                for s in (-1, 1)
            ],
            shade(gown, 1.4),
            0.4,
        )


def smart_casual(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Smart casual."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    blazer = tones(rng, [(170, 130, 90), (110, 110, 118), (60, 80, 110)])
    o.trousers((196, 176, 140))
    o.top(blazer, bottom=f.hip_y + 0.03)
    o.lapels(blazer, (170, 200, 230), 0.12)
    o.paint(
        lambda p: [
            p.poly(
                [
                    (cx + s * f.neck_w * 1.4, sy - 0.02),
                    (cx + s * 0.005, sy + 0.02),
                    (cx + s * f.neck_w * 1.6, sy + 0.02),
                ]
            )
            for s in (-1, 1)
        ],
        (190, 215, 240),
    )
    o.paint(
        lambda p: p.rect(cx - f.hip_w + 0.01, f.hip_y - 0.05, cx + f.hip_w - 0.01, f.hip_y - 0.036),
        (90, 60, 40),
    )
    o.shoes((110, 70, 40))


def luxury(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Luxury / High fashion."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    male = f.male
    coat = tones(rng, [(196, 156, 104), (20, 20, 22), (240, 236, 228)])
    o.trousers((24, 24, 26), extra=0.0)
    cov = o.top(coat, bottom=f.knee_y + 0.05, extra=0.02)
    o.paint(
        lambda p: p.poly(
            [
                (cx - f.hip_w - 0.02, f.hip_y),
                (cx + f.hip_w + 0.02, f.hip_y),
                (cx + f.hip_w + 0.06, f.knee_y + 0.05),
                (cx - f.hip_w - 0.06, f.knee_y + 0.05),
            ]
        ),
        coat,
    )
    gold = (220, 180, 80)

    def mono(p: Pen) -> None:
        for i, y in enumerate(np.arange(sy, f.knee_y, 0.05)):
            for x in np.arange(cx - 0.3 + (0.025 if i % 2 else 0), cx + 0.3, 0.05):
                p.poly([(x, y - 0.008), (x + 0.008, y), (x, y + 0.008), (x - 0.008, y)])

    full = np.maximum(
        cov,
        o.c.full(
            o.c.mask(
                lambda p: p.poly(
                    [
                        (cx - f.hip_w - 0.02, f.hip_y),
                        (cx + f.hip_w + 0.02, f.hip_y),
                        (cx + f.hip_w + 0.06, f.knee_y + 0.05),
                        (cx - f.hip_w - 0.06, f.knee_y + 0.05),
                    ]
                )
            )
        ),
    )
    o.within(full, mono, mix(coat, gold, 0.6), 0.8)
    o.lapels(coat, (20, 20, 22), 0.16)
    o.paint(
        lambda p: p.rect(
            cx - f.waist_w - 0.02, f.waist_y - 0.015, cx + f.waist_w + 0.02, f.waist_y + 0.012
        ),
        (20, 20, 20),
    )
    o.paint(lambda p: p.rect(cx - 0.018, f.waist_y - 0.018, cx + 0.018, f.waist_y + 0.015), gold)
    o.buttons(cx + 0.03, sy + 0.2, f.hip_y, 3, gold, 0.007)
    o.shoes((20, 20, 20), kind="heel" if not male else "plain")


def vintage(o: Outfit, skin: RGB, rng: np.random.Generator) -> None:
    """Vintage / Retro."""
    f = o.f
    cx, sy = f.cx, f.shoulder_y
    male = f.male
    if male:
        shirt = (214, 160, 50)
        o.trousers((120, 80, 50), flare=0.05, extra=0.005)
        top = o.top(shirt, bottom=f.hip_y - 0.02)
        o.pattern_dots(top, (140, 80, 30), 0.04, 0.008)
        o.paint(
            lambda p: [
                p.poly(
                    [
                        (cx + s * f.neck_w * 1.2, sy - 0.02),
                        (cx + s * 0.07, sy + 0.04),
                        (cx, sy + 0.06),
                    ]
                )
                for s in (-1, 1)
            ],
            (240, 230, 200),
        )
        o.paint(
            lambda p: p.rect(cx - f.hip_w, f.hip_y - 0.055, cx + f.hip_w, f.hip_y - 0.035),
            (70, 40, 20),
        )
    else:
        dress = (200, 40, 50) if rng.uniform() < 0.5 else (40, 90, 150)
        top = o.top(dress, bottom=f.waist_y + 0.02, sleeve="short")
        sk = o.skirt(dress, f.knee_y + 0.06, 0.12)
        o.pattern_dots(np.maximum(top, sk), WHITE, 0.035, 0.007)
        o.paint(
            lambda p: p.rect(cx - f.waist_w, f.waist_y - 0.01, cx + f.waist_w, f.waist_y + 0.015),
            (30, 30, 30),
        )
        o.paint(lambda p: p.ellipse(cx, sy - 0.005, f.neck_w * 1.6, 0.025), WHITE)
    o.shoes((90, 50, 30), kind="heel")
