"""Hair shapes: the skull cap outline and the pieces drawn on it (locks, tails, braids, curls,
stipple, stray strands).
"""

from __future__ import annotations

import numpy as np

from stylisticbias.generators.procedural.canvas import Canvas, Layer, Mask, Pen, bezier
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point


def skull(g: FaceGeometry, grow: float, y_cut: float) -> list[Point]:
    """Upper skull outline grown by ``grow`` units (less at the sides), ``y_cut`` to ``y_cut``."""
    ry = g.eye_y - g.top
    pts: list[Point] = []
    for deg in np.linspace(180, 360, 25):
        a = np.radians(deg)
        side = 0.45 + 0.55 * abs(np.sin(a)) ** 2
        pts.append(
            (g.cx + (g.fw + grow * side + 0.004) * np.cos(a), g.eye_y + (ry + grow) * np.sin(a))
        )
    return [(pts[0][0], y_cut), *pts, (pts[-1][0], y_cut)]


def cap(g: FaceGeometry, vol: float, side_y: float, hairline: float, part: float) -> list[Point]:
    """Hair on the skull: grown skull down to ``side_y`` at the temples, hairline across."""
    outer = skull(g, vol, side_y)
    fw = g.fw
    hl = hairline
    r = g.receding
    inner = [
        (g.cx + fw * 0.99, side_y),
        (g.cx + fw * 0.9, hl + 0.045 - 0.02 * r),
        (g.cx + fw * 0.72, hl + 0.018 - 0.012 * r),
        (g.cx + fw * 0.4, hl + 0.002 + 0.01 * r),
        (g.cx + part * fw * 0.3, hl - 0.008 + 0.025 * r),
        (g.cx - fw * 0.4, hl + 0.002 + 0.01 * r),
        (g.cx - fw * 0.72, hl + 0.018 - 0.012 * r),
        (g.cx - fw * 0.9, hl + 0.045 - 0.02 * r),
        (g.cx - fw * 0.99, side_y),
    ]
    return outer + inner


def jagged(
    pts: list[Point], cx: float, cy: float, rng: np.random.Generator, amp: float
) -> list[Point]:
    """Push alternate outline points out (and others slightly in) for a ragged edge."""
    out = []
    for i, (x, y) in enumerate(pts):
        dx, dy = x - cx, y - cy
        n = max(1e-6, (dx * dx + dy * dy) ** 0.5)
        k = amp * (1.0 if i % 2 else -0.3) * rng.uniform(0.5, 1.3)
        out.append((x + dx / n * k, y + dy / n * k))
    return out


def lock(p: Pen, g: FaceGeometry, s: int, L: float) -> None:
    """A long lock of hair falling in front of the shoulder on side ``s``."""
    x0 = g.cx + s * (g.fw + 0.01)
    end = g.eye_y + 0.06 + 0.55 * L
    p.smooth(
        [
            (x0 - s * 0.02, g.ear_y1 - 0.01),
            (x0 + s * 0.01, g.ear_y1),
            (g.cx + s * (g.neck_w + 0.09), g.shoulder_y - 0.02),
            (g.cx + s * (g.neck_w + 0.085), end),
            (g.cx + s * (g.neck_w + 0.02), end - 0.02),
            (g.cx + s * (g.neck_w + 0.01), g.shoulder_y),
            (x0 - s * 0.045, g.jaw_y),
        ]
    )


def lock_lines(p: Pen, g: FaceGeometry, s: int, L: float) -> None:
    """Strand lines of :func:`lock`."""
    end = g.eye_y + 0.06 + 0.55 * L
    for k in range(5):
        t = k / 4
        x = g.cx + s * (g.neck_w + 0.025 + 0.055 * t)
        p.curve(
            [
                (g.cx + s * (g.fw - 0.01 + 0.02 * t), g.ear_y1),
                (x + s * 0.01, g.shoulder_y),
                (x, end - 0.01),
            ],
            0.002,
        )


def tail(p: Pen, g: FaceGeometry, s: int, L: float) -> None:
    """A ponytail's tail on side ``s``."""
    end = g.shoulder_y + 0.04 + 0.12 * L
    x0 = g.cx + s * (g.fw + 0.01)
    p.smooth(
        [
            (x0, g.eye_y),
            (x0 + s * 0.04, g.jaw_y),
            (g.cx + s * (g.neck_w + 0.07), g.shoulder_y),
            (g.cx + s * (g.neck_w + 0.05), end),
            (g.cx + s * (g.neck_w + 0.02), g.shoulder_y - 0.01),
            (x0 - s * 0.01, g.jaw_y),
        ]
    )


def tail_lines(p: Pen, g: FaceGeometry, s: int, L: float) -> None:
    """Strand lines of :func:`tail`."""
    end = g.shoulder_y + 0.04 + 0.12 * L
    for k in range(3):
        x = g.cx + s * (g.neck_w + 0.03 + 0.015 * k)
        p.curve(
            [
                (g.cx + s * (g.fw + 0.015), g.eye_y + 0.01),
                (x + s * 0.02, g.shoulder_y - 0.03),
                (x, end - 0.02),
            ],
            0.002,
        )


def braid(
    c: Canvas, layer: Layer, g: FaceGeometry, col: np.ndarray, dark: np.ndarray, s: int, L: float
) -> None:
    """A plaited braid on side ``s`` with its tie and tip, painted into ``layer``."""
    start = (g.cx + s * (g.fw + 0.005), g.ear_y1)
    end_y = g.eye_y + 0.08 + 0.5 * L
    path = bezier(
        start,
        (g.cx + s * (g.neck_w + 0.08), g.shoulder_y - 0.05),
        (g.cx + s * (g.neck_w + 0.05), end_y),
        12,
    )

    def plaits(p: Pen) -> None:
        for i, (x, y) in enumerate(path[:-1]):
            off = 0.008 if i % 2 else -0.008
            p.ellipse(x + off, y, 0.02, 0.024)

    layer.paint(c.mask(plaits), col)

    def plait_lines(p: Pen) -> None:
        for i, (x, y) in enumerate(path[:-1]):
            off = 0.008 if i % 2 else -0.008
            p.arc(x + off, y, 0.02, 0.024, 20 if off > 0 else 120, 60 if off > 0 else 160, 0.003)
            p.line(
                [(x - 0.012, y - 0.018), (x + 0.012, y + 0.006)]
                if i % 2
                else [(x + 0.012, y - 0.018), (x - 0.012, y + 0.006)],
                0.0025,
            )

    layer.paint(c.mask(plait_lines, blur=0.001), dark, 0.7)
    ex, ey = path[-1]
    layer.paint(
        c.mask(lambda p: p.rect(ex - 0.012, ey - 0.02, ex + 0.012, ey - 0.01, radius=0.003)),
        (70, 50, 110),
    )
    layer.paint(
        c.mask(
            lambda p: p.poly(
                [
                    (ex - 0.012, ey - 0.01),
                    (ex + 0.012, ey - 0.01),
                    (ex + 0.004, ey + 0.03),
                    (ex - 0.006, ey + 0.03),
                ]
            )
        ),
        col,
    )


def curls(
    c: Canvas,
    layer: Layer,
    g: FaceGeometry,
    dark: np.ndarray,
    cx: float,
    cy: float,
    r: float,
    rng: np.random.Generator,
    n: int,
) -> None:
    """Small curl arcs inside the ellipse at (cx, cy) of radius ``r``, clipped to ``layer``."""
    del g

    def curls(p: Pen) -> None:
        for _ in range(n):
            a = rng.uniform(0, 2 * np.pi)
            rr = r * np.sqrt(rng.uniform(0, 1))
            x, y = cx + rr * np.cos(a), cy + rr * 0.86 * np.sin(a)
            p.arc(x, y, 0.008, 0.008, rng.uniform(0, 360), rng.uniform(0, 360) + 200, 0.0022)

    m = c.mask(curls)
    layer.paint(m.times(layer.alpha > 0.5), dark, 0.55)


def stipple(
    c: Canvas,
    layer: Layer,
    region: Mask,
    dark: np.ndarray,
    rng: np.random.Generator,
    n: int,
    r: float,
    a: float,
) -> None:
    """Stubble-like dots inside ``region`` (buzz cut, shaved sides)."""
    if region.empty:
        return
    h, w = region.a.shape
    ys = rng.uniform(region.y0, region.y0 + h, n) / c.w
    xs = rng.uniform(region.x0, region.x0 + w, n) / c.w

    def dots(p: Pen) -> None:
        for x, y in zip(xs, ys):
            p.ellipse(x, y, r, r)

    layer.paint(c.mask(dots).times(c.full(region)), dark, a)


def strays(
    c: Canvas,
    layer: Layer,
    g: FaceGeometry,
    col: np.ndarray,
    rng: np.random.Generator,
    yr: tuple[float, float],
    w: float,
    n: int,
) -> None:
    """Stray strands sticking out of the hair outline (messy hair)."""

    def strays(p: Pen) -> None:
        for _ in range(n):
            s = rng.choice([-1, 1])
            y = rng.uniform(*yr)
            x = g.cx + s * w * rng.uniform(0.7, 1.0)
            if y < g.top + 0.05:
                x = g.cx + rng.uniform(-w, w)
            dx, dy = s * rng.uniform(0.01, 0.035), rng.uniform(-0.03, 0.0)
            p.curve([(x, y), (x + dx * 0.6, y + dy * 0.3 - 0.01), (x + dx, y + dy)], 0.0028)

    layer.paint(c.mask(strays), col)
