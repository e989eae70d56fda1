"""The eleven fashion styles as garments drawn over the full-body figure."""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).
# ruff: noqa: B023

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stylisticbias.generators.procedural.body import Figure
from stylisticbias.generators.procedural.canvas import Canvas, Layer, Pen, mix, shade

RGB = tuple[float, float, float]
WHITE: RGB = (245, 245, 242)
BLACK: RGB = (28, 28, 32)
DENIM: RGB = (62, 92, 140)


class Outfit:
    """Helpers that paint garment pieces of a figure into one layer."""

    def __init__(self, c: Canvas, f: Figure, rng: np.random.Generator) -> None:
        self.c, self.f, self.rng = c, f, rng
        self.L = c.layer()

    def paint(
        self, fn: Callable[[Pen], None], col: RGB, a: float = 1.0, blur: float = 0.0
    ) -> np.ndarray:
        """Paint a shape; returns its full-canvas coverage."""
        m = self.c.mask(fn, blur=blur)
        self.L.paint(m, col, a)
        return self.c.full(m)

    def within(
        self,
        region: np.ndarray,
        fn: Callable[[Pen], None],
        col: RGB,
        a: float = 1.0,
        blur: float = 0.0,
    ) -> None:
        """Paint a detail clipped to a garment's coverage."""
        self.L.paint(self.c.mask(fn, blur=blur).times(region), col, a)

    # ---- pieces --------------------------------------------------------------------------
    def top(
        self,
        col: RGB,
        *,
        bottom: float | None = None,
        sleeve: str = "long",
        extra: float = 0.0,
        neck: str = "crew",
    ) -> np.ndarray:
        """Torso garment with sleeves (none | short | long) and a neckline (crew | v | deep)."""
        f = self.f
        bottom = f.hip_y + 0.04 if bottom is None else bottom
        sl = {"none": 0.0, "short": 0.2, "long": 1.0}[sleeve]

        def shape(p: Pen) -> None:
            p.smooth(f.torso(bottom, extra))
            if sl > 0:
                for s in (-1, 1):
                    a0, a1, a2 = f.arm(s)
                    if sl < 1:
                        end = (a0[0] + (a1[0] - a0[0]) * 0.45, a0[1] + (a1[1] - a0[1]) * 0.45)
                        p.line([a0, end], f.arm_w * 2.0 + extra)
                    else:
                        p.line([a0, a1, (a2[0], a2[1] - 0.005)], f.arm_w * 1.8 + extra)

        cov = self.paint(shape, col)
        # neckline
        cx, y = f.cx, f.shoulder_y
        depth = {"crew": 0.02, "v": 0.09, "deep": 0.2}[neck]
        nw = f.neck_w * (1.5 if neck == "crew" else 1.9)
        self.paint(
            lambda p: (
                p.poly([(cx - nw, y - 0.03), (cx + nw, y - 0.03), (cx, y + depth)])
                if neck != "crew"
                else p.ellipse(cx, y - 0.01, nw, 0.03)
            ),
            (0, 0, 0),
            0.0,
        )
        self.side_shade(cov, col)
        return cov

    def side_shade(self, cov: np.ndarray, col: RGB) -> None:
        """Darken a garment towards the figure's sides (cylindrical shading)."""
        from stylisticbias.generators.procedural.canvas import Mask

        c, f = self.c, self.f
        rows, cols = np.nonzero(cov.any(axis=1))[0], np.nonzero(cov.any(axis=0))[0]
        if len(rows) == 0:
            return
        y0, y1, x0, x1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        X = c.X[y0:y1, x0:x1]
        k = np.clip(np.abs(X - f.cx) / (f.hip_w + 0.08), 0, 1) ** 2
        m = (cov[y0:y1, x0:x1] * k * 0.45).astype(np.float32)
        self.L.paint(Mask(m, int(y0), int(x0)), shade(col, 0.45))

    def trousers(
        self, col: RGB, *, flare: float = 0.0, extra: float = 0.01, length: float | None = None
    ) -> np.ndarray:
        """Trousers (``length`` = hem y; shorts when short)."""
        f = self.f
        y_end = f.ankle_y + 0.02 if length is None else length

        def shape(p: Pen) -> None:
            p.poly(
                [
                    (f.cx - f.hip_w - extra, f.hip_y - 0.06),
                    (f.cx + f.hip_w + extra, f.hip_y - 0.06),
                    (f.cx + f.hip_w + extra, f.crotch_y),
                    (f.cx - f.hip_w - extra, f.crotch_y),
                ]
            )
            for s in (-1, 1):
                p.poly(f.leg(s, y_end, flare=flare, extra=extra))

        cov = self.paint(shape, col)
        self.within(
            cov,
            lambda p: p.line([(f.cx, f.hip_y - 0.04), (f.cx, f.crotch_y)], 0.003),
            shade(col, 0.6),
            0.7,
        )
        self.side_shade(cov, col)
        return cov

    def skirt(self, col: RGB, hem: float, flare: float) -> np.ndarray:
        """A skirt or the lower part of a dress from the waist to ``hem``."""
        f = self.f
        cov = self.paint(
            lambda p: p.poly(
                [
                    (f.cx - f.waist_w - 0.005, f.waist_y),
                    (f.cx + f.waist_w + 0.005, f.waist_y),
                    (f.cx + f.hip_w + flare, hem),
                    (f.cx - f.hip_w - flare, hem),
                ]
            ),
            col,
        )
        self.side_shade(cov, col)
        return cov

    def shoes(self, col: RGB, *, kind: str = "plain") -> None:
        """A pair of shoes (plain | sneaker | boot | heel)."""
        f = self.f
        for s in (-1, 1):
            x = f.cx + s * (0.055 + 0.01 * f.body)
            h = 0.06 if kind == "boot" else 0.025
            self.paint(
                lambda p, x=x, h=h: p.rect(
                    x - f.calf_w * 0.8,
                    f.ankle_y + 0.03 - h,
                    x + f.calf_w * 0.8 + s * 0.012,
                    f.foot_y,
                    radius=0.012,
                ),
                col,
            )
            if kind == "sneaker":
                self.paint(
                    lambda p, x=x: p.rect(
                        x - f.calf_w * 0.8,
                        f.foot_y - 0.01,
                        x + f.calf_w * 0.8 + s * 0.012,
                        f.foot_y,
                        radius=0.004,
                    ),
                    WHITE,
                )
                self.paint(
                    lambda p, x=x: p.line(
                        [(x - 0.015, f.foot_y - 0.03), (x + 0.015, f.foot_y - 0.02)], 0.005
                    ),
                    (220, 60, 50),
                )
            if kind == "heel":
                self.paint(
                    lambda p, x=x: p.rect(x - 0.004, f.foot_y - 0.01, x + 0.004, f.foot_y + 0.02),
                    col,
                )

    def buttons(self, x: float, y0: float, y1: float, n: int, col: RGB, r: float = 0.005) -> None:
        """A column of buttons."""
        ys = np.linspace(y0, y1, n)
        self.paint(lambda p: [p.ellipse(x, y, r, r) for y in ys], col)

    def lapels(self, col: RGB, shirt: RGB, depth: float) -> None:
        """Jacket opening with a shirt V and two lapels."""
        f = self.f
        cx, y = f.cx, f.shoulder_y
        nw = f.neck_w * 1.4
        self.paint(
            lambda p: p.poly([(cx - nw, y - 0.02), (cx + nw, y - 0.02), (cx, y + depth)]), shirt
        )
        for s in (-1, 1):
            self.paint(
                lambda p, s=s: p.poly(
                    [
                        (cx + s * nw, y - 0.02),
                        (cx + s * (nw + 0.03), y + 0.05),
                        (cx + s * 0.02, y + depth * 0.8),
                        (cx, y + depth),
                    ]
                ),
                shade(col, 0.8),
            )

    def tie(self, col: RGB, y1: float) -> None:
        """A necktie."""
        f = self.f
        cx, y = f.cx, f.shoulder_y
        self.paint(
            lambda p: p.poly(
                [
                    (cx - 0.012, y - 0.005),
                    (cx + 0.012, y - 0.005),
                    (cx + 0.008, y + 0.01),
                    (cx - 0.008, y + 0.01),
                ]
            ),
            shade(col, 0.8),
        )
        self.paint(
            lambda p: p.poly(
                [
                    (cx - 0.008, y + 0.01),
                    (cx + 0.008, y + 0.01),
                    (cx + 0.017, y1 - 0.02),
                    (cx, y1),
                    (cx - 0.017, y1 - 0.02),
                ]
            ),
            col,
        )

    def pattern_dots(self, region: np.ndarray, col: RGB, step: float, r: float) -> None:
        """Polka dots clipped to a garment."""
        c = self.c
        ys, xs = np.nonzero(region > 0.5)
        if len(xs) == 0:
            return
        y0, y1, x0, x1 = ys.min() / c.w, ys.max() / c.w, xs.min() / c.w, xs.max() / c.w

        def dots(p: Pen) -> None:
            for i, y in enumerate(np.arange(y0, y1, step)):
                for x in np.arange(x0 + (step / 2 if i % 2 else 0), x1, step):
                    p.ellipse(x, y, r, r)

        self.within(region, dots, col)

    def stripes(
        self, region: np.ndarray, col: RGB, step: float, w: float, vertical: bool = True
    ) -> None:
        """Straight stripes clipped to a garment."""

        def lines(p: Pen) -> None:
            for t in np.arange(0, 2, step):
                if vertical:
                    p.line([(t, 0), (t, 2)], w, round_caps=False)
                else:
                    p.line([(0, t), (1, t)], w, round_caps=False)

        self.within(region, lines, col)


def _tones(rng: np.random.Generator, options: list[RGB]) -> RGB:
    return options[int(rng.integers(len(options)))]


def render(c: Canvas, f: Figure, style: str, skin: RGB, seed: int) -> Layer:
    """Draw one fashion style onto a figure."""
    rng = np.random.default_rng(seed)
    o = Outfit(c, f, rng)
    cx, sy = f.cx, f.shoulder_y
    male = f.male
    if style == "Professional / Business formal":
        suit = _tones(rng, [(34, 44, 72), (52, 54, 60), (30, 30, 36)])
        shirt = WHITE if male else (232, 226, 236)
        if male:
            o.trousers(suit)
        else:
            o.skirt(suit, f.knee_y + 0.04, 0.0)
        o.top(suit, bottom=f.hip_y + 0.05)
        o.lapels(suit, shirt, 0.17)
        if male:
            o.tie(_tones(rng, [(140, 30, 40), (40, 70, 130), (90, 90, 100)]), sy + 0.2)
        o.buttons(cx + 0.008, sy + 0.22, sy + 0.3, 2, shade(suit, 0.6))
        o.shoes(BLACK, kind="plain" if male else "heel")
    elif style == "Formal / Evening wear":
        if male:
            o.trousers(BLACK)
            o.stripes(o.trousers(BLACK), (60, 60, 66), 2.0, 0.004)
            o.top(BLACK, bottom=f.hip_y + 0.03)
            o.lapels((10, 10, 12), WHITE, 0.2)
            o.paint(
                lambda p: p.poly(
                    [(cx - 0.028, sy + 0.005), (cx, sy + 0.015), (cx - 0.028, sy + 0.03)]
                ),
                BLACK,
            )
            o.paint(
                lambda p: p.poly(
                    [(cx + 0.028, sy + 0.005), (cx, sy + 0.015), (cx + 0.028, sy + 0.03)]
                ),
                BLACK,
            )
            o.buttons(cx, sy + 0.07, sy + 0.17, 3, BLACK, 0.004)
            o.shoes((12, 12, 14))
        else:
            gown = _tones(rng, [(110, 20, 50), (20, 80, 70), (30, 30, 90)])
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
    elif style == "Casual":
        tee = _tones(
            rng, [(200, 60, 50), (60, 130, 90), (240, 240, 235), (230, 180, 60), (90, 120, 190)]
        )
        o.trousers(DENIM)
        o.top(tee, bottom=f.hip_y + 0.02, sleeve="short")
        o.shoes(WHITE, kind="sneaker")
    elif style == "Smart casual":
        blazer = _tones(rng, [(170, 130, 90), (110, 110, 118), (60, 80, 110)])
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
            lambda p: p.rect(
                cx - f.hip_w + 0.01, f.hip_y - 0.05, cx + f.hip_w - 0.01, f.hip_y - 0.036
            ),
            (90, 60, 40),
        )
        o.shoes((110, 70, 40))
    elif style == "Sporty / Athletic wear":
        main = _tones(rng, [(200, 40, 40), (30, 90, 170), (30, 30, 34), (40, 150, 120)])
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
    elif style == "Streetwear":
        hoodie = _tones(rng, [(30, 30, 34), (80, 90, 60), (150, 150, 155), (60, 40, 90)])
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
    elif style == "Functional / outdoor wear":
        shell = _tones(rng, [(220, 110, 30), (70, 90, 60), (40, 90, 140)])
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
    elif style == "Luxury / High fashion":
        coat = _tones(rng, [(196, 156, 104), (20, 20, 22), (240, 236, 228)])
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
        o.paint(
            lambda p: p.rect(cx - 0.018, f.waist_y - 0.018, cx + 0.018, f.waist_y + 0.015), gold
        )
        o.buttons(cx + 0.03, sy + 0.2, f.hip_y, 3, gold, 0.007)
        o.shoes((20, 20, 20), kind="heel" if not male else "plain")
    elif style == "Vintage / Retro":
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
                lambda p: p.rect(
                    cx - f.waist_w, f.waist_y - 0.01, cx + f.waist_w, f.waist_y + 0.015
                ),
                (30, 30, 30),
            )
            o.paint(lambda p: p.ellipse(cx, sy - 0.005, f.neck_w * 1.6, 0.025), WHITE)
        o.shoes((90, 50, 30), kind="heel")
    elif style == "Worn / Distressed clothing":
        tee = mix(
            _tones(rng, [(120, 110, 100), (90, 100, 90), (110, 90, 80)]), (200, 200, 190), 0.3
        )
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
    elif style == "Daring / Provocative":
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
                lambda p: [
                    p.ellipse(cx + s * 0.04, f.waist_y - 0.03, 0.018, 0.03) for s in (-1, 1)
                ],
                shade(skin, 0.95),
            )
            o.shoes((20, 20, 20), kind="heel")
    else:
        raise ValueError(f"unknown fashion style {style!r}")
    return o.L


def o_skin(skin: RGB) -> RGB:
    """Skin seen through rips."""
    return skin
