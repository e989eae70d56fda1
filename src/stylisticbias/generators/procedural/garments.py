"""Garment pieces (tops, trousers, skirts, shoes, lapels, patterns) painted over a figure."""

# Drawing lambdas run at once inside their loop (B023 is a false positive).
# ruff: noqa: B023

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stylisticbias.generators.procedural.body import Figure
from stylisticbias.generators.procedural.canvas import Canvas, Pen, shade

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


def tones(rng: np.random.Generator, options: list[RGB]) -> RGB:
    """One of ``options``, drawn from ``rng``."""
    return options[int(rng.integers(len(options)))]
