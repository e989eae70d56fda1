"""Hair: colour (natural or named), length (bald .. long) and style, as three layers.

``hair_back`` sits behind the head and body (volume behind the skull, hair behind the
shoulders), ``hair_drape`` sits in front of the shoulders but behind the face (long locks,
braids, ponytail tails), ``hair_front`` sits on the skull (crown, hairline, fringe).
Hair is always tucked behind the ears: the ears stay visible.
"""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stylisticbias.generators.procedural import palette
from stylisticbias.generators.procedural.canvas import Canvas, Layer, Mask, Pen, bezier
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point

#: hair length edits (0 = bald); base lengths are drawn from bands between these
NAMED_LENGTH = {"Bald": 0.0, "Short": 0.12, "Medium": 0.5, "Long": 1.0}


@dataclass(frozen=True)
class HairLook:
    """What the hair layers depend on."""

    color: str | None  # None = the identity's natural colour; else a Hair color value
    length: float
    style: str  # natural | Messy | Slicked back | Ponytail | Braid | Bun | Afro | Buzz cut | Mohawk
    hidden: bool = False  # covered by a headscarf


def texture(c: Canvas, seed: int) -> np.ndarray:
    """Per-identity strand texture in about [-1, 1]: streaks stretched along y."""
    rng = np.random.default_rng(seed)
    w, h = c.w, c.h
    coarse = rng.normal(0, 1, size=(max(2, h // 12), w)).astype(np.float32)
    # smooth across x a little, stretch along y
    k = np.array([0.25, 0.5, 0.25], np.float32)
    coarse = np.apply_along_axis(lambda r: np.convolve(r, k, mode="same"), 1, coarse)
    ys = np.linspace(0, coarse.shape[0] - 1, h)
    i0 = np.floor(ys).astype(int)
    i1 = np.minimum(i0 + 1, coarse.shape[0] - 1)
    t = (ys - i0)[:, None].astype(np.float32)
    out = coarse[i0] * (1 - t) + coarse[i1] * t
    return np.clip(out / 1.2, -1.5, 1.5).astype(np.float32)


def colour_field(
    c: Canvas, g: FaceGeometry, tex: np.ndarray, name: str | None, *, wet: bool = False
) -> np.ndarray:
    """Full-canvas hair colour: base colour x strand texture + a sheen band over the crown."""
    if name is None:
        base, sheen, k = g.hair, tuple(min(255.0, v * 1.6 + 30) for v in g.hair), 0.22
    elif name == "Unnatural":
        base, sheen = palette.UNNATURAL[g.unnatural % len(palette.UNNATURAL)]
        k = 0.4
    else:
        base, sheen, k = palette.NAMED_HAIR[name]
    if wet:
        k = min(0.8, k + 0.3)
    b = np.asarray(base, np.float32) / 255
    sh = np.asarray(sheen, np.float32) / 255
    amp = 0.16 if name in (None, "Black") else 0.22
    field = b[None, None, :] * (1 + amp * tex)[..., None]
    d = ((c.X - g.cx) / (g.fw * 1.3)) ** 2 + ((c.Y - (g.top + 0.035)) / 0.03) ** 2
    band = np.exp(-d * 1.5) * (0.6 + 0.4 * np.clip(tex, -1, 1))
    field = field * (1 - k * band[..., None]) + sh[None, None, :] * (k * band)[..., None]
    return np.clip(field, 0, 1).astype(np.float32)


def _skull(g: FaceGeometry, grow: float, y_cut: float) -> list[Point]:
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


def _cap(g: FaceGeometry, vol: float, side_y: float, hairline: float, part: float) -> list[Point]:
    """Hair on the skull: grown skull down to ``side_y`` at the temples, hairline across."""
    outer = _skull(g, vol, side_y)
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


def _jagged(
    pts: list[Point], cx: float, cy: float, rng: np.random.Generator, amp: float
) -> list[Point]:
    out = []
    for i, (x, y) in enumerate(pts):
        dx, dy = x - cx, y - cy
        n = max(1e-6, (dx * dx + dy * dy) ** 0.5)
        k = amp * (1.0 if i % 2 else -0.3) * rng.uniform(0.5, 1.3)
        out.append((x + dx / n * k, y + dy / n * k))
    return out


def render(
    c: Canvas, g: FaceGeometry, look: HairLook, tex: np.ndarray, skin: np.ndarray
) -> dict[str, Layer]:
    """The three hair layers for ``look``."""
    back, drape, front = c.layer(), c.layer(), c.layer()
    layers = {"hair_back": back, "hair_drape": drape, "hair_front": front}
    if look.hidden:
        return layers
    style = look.style
    wet = style == "Slicked back"
    col = colour_field(c, g, tex, look.color, wet=wet)
    dark = col * np.float32(0.62)
    rng = np.random.default_rng(g.accent + 7)
    cx, fw = g.cx, g.fw
    L = look.length
    part = g.hair_part

    if style == "Afro":
        r = fw * 1.85
        acy = g.top + 0.085

        def blob(p: Pen) -> None:
            pts = []
            for k in range(40):
                a = 2 * np.pi * k / 40
                rr = r * (1 + 0.035 * np.sin(7 * a + g.accent))
                pts.append((cx + rr * np.cos(a), acy + rr * 0.86 * np.sin(a)))
            p.smooth(pts)

        back.paint(c.mask(blob), col)
        _curls(c, back, g, dark, cx, acy, r, rng, n=220)
        front.paint(
            c.mask(lambda p: p.smooth(_cap(g, 0.05, g.ear_y0 - 0.01, g.hairline - 0.01, 0))), col
        )
        _curls(c, front, g, dark, cx, g.top + 0.04, fw * 1.0, rng, n=70)
        return layers

    if style == "Buzz cut":
        m = c.mask(lambda p: p.smooth(_cap(g, 0.004, g.ear_y0 + 0.005, g.hairline, 0)))
        front.paint(m, col, 0.55)
        _stipple(c, front, m, dark, rng, 900, 0.0022, 0.55)
        return layers

    if style == "Mohawk":
        side = c.mask(lambda p: p.smooth(_cap(g, 0.002, g.ear_y0, g.hairline + 0.01, 0)))
        front.paint(side, col, 0.22)
        _stipple(c, front, side, dark, rng, 500, 0.002, 0.3)
        strip_w = fw * 0.32
        pts: list[Point] = [(cx - strip_w, g.hairline + 0.01)]
        n = 7
        for k in range(n + 1):
            t = k / n
            a = np.radians(180 + 180 * t)
            x = cx + fw * 0.95 * np.cos(a) * 0.0 + (t - 0.5) * strip_w * 2.2
            y = g.top - 0.06 - 0.025 * np.sin(np.pi * t)
            pts.append((x, y if k % 2 == 0 else y + 0.045))
        pts.append((cx + strip_w, g.hairline + 0.01))
        pts.append((cx, g.hairline - 0.002))
        front.paint(c.mask(lambda p: p.poly(pts)), col)
        front.paint(
            c.mask(lambda p: p.line([(cx, g.hairline), (cx, g.top - 0.05)], 0.004), blur=0.003),
            dark,
            0.5,
        )
        return layers

    tight = style in ("Slicked back", "Ponytail", "Bun", "Braid")
    if L <= 0.0:  # bald: a little scalp sheen, nothing else
        front.paint(
            c.mask(lambda p: p.ellipse(cx - 0.02, g.top + 0.04, fw * 0.45, 0.03), blur=0.012),
            (255, 250, 245),
            0.28,
        )
        front.paint(
            c.mask(
                lambda p: p.arc(cx, g.eye_y, fw + 0.001, g.eye_y - g.top + 0.001, 200, 340, 0.004),
                blur=0.004,
            ),
            (90, 70, 60),
            0.25,
        )
        return layers

    vol = 0.006 if tight else (0.008 if L < 0.2 else g.hair_vol)
    if style == "Messy":
        vol += 0.012
    side_y = g.ear_y0 + (0.0 if L < 0.2 else 0.012)
    hairline = g.hairline + (0.004 if L < 0.2 else 0.0)
    cap = _cap(g, vol, side_y, hairline, part if style == "natural" else 0.0)
    if style == "Messy":
        cap = _jagged(cap[:27], cx, g.eye_y, rng, 0.03) + cap[27:]

    # back hair: behind the head, down to the length
    if L >= 0.4 and not tight:
        end = g.eye_y + 0.06 + 0.55 * L
        w = fw + vol + 0.02 + 0.02 * L

        def back_shape(p: Pen) -> None:
            p.smooth(
                [
                    (cx - w, g.eye_y - 0.05),
                    (cx - w - 0.01, (g.eye_y + end) / 2),
                    (cx - w + 0.01, end),
                    (cx, end + 0.02),
                    (cx + w - 0.01, end),
                    (cx + w + 0.01, (g.eye_y + end) / 2),
                    (cx + w, g.eye_y - 0.05),
                    (cx, g.top),
                ]
            )

        bm = c.mask(back_shape)
        back.paint(bm, col * np.float32(0.8))
        if style == "Messy":
            _strays(c, back, g, col, rng, (g.eye_y, end), w, 16)
    if tight:
        back.paint(
            c.mask(lambda p: p.smooth(_skull(g, 0.008, g.ear_y0 + 0.03))), col * np.float32(0.85)
        )

    cap_m = c.mask(lambda p: p.smooth(cap))
    front.paint(
        c.mask(lambda p: p.smooth([(x, y + 0.008) for x, y in cap]), blur=0.006), (40, 25, 20), 0.25
    )
    front.paint(cap_m, col)
    # strands / comb lines
    if style == "Slicked back" or tight:

        def comb(p: Pen) -> None:
            for k in range(-5, 6):
                x0 = cx + k * fw * 0.16
                p.curve(
                    [
                        (x0, hairline + 0.006),
                        (x0 * 0.9 + cx * 0.1, g.top + 0.02),
                        (cx + k * 0.004, g.top - 0.004),
                    ],
                    0.0025,
                )

        front.paint(
            c.mask(comb, blur=0.002).times(c.full(c.mask(lambda p: p.smooth(cap)))), dark, 0.55
        )
        front.paint(
            c.mask(lambda p: p.ellipse(cx + 0.02, g.top + 0.03, fw * 0.5, 0.012), blur=0.008),
            (255, 255, 255),
            0.35 if wet else 0.15,
        )
    else:

        def strands(p: Pen) -> None:
            px = cx + part * fw * 0.3
            for k in range(-6, 7):
                if k == 0:
                    continue
                s = 1 if k > 0 else -1
                x_end = cx + k * fw * 0.16
                p.curve(
                    [
                        (px, g.top - 0.003),
                        (px + (x_end - px) * 0.6, g.top + 0.02),
                        (x_end, hairline + 0.02 + 0.004 * abs(k)),
                    ],
                    0.0022,
                )
                del s

        front.paint(
            c.mask(strands, blur=0.0015).times(c.full(c.mask(lambda p: p.smooth(cap)))), dark, 0.4
        )
        if style == "natural" and L >= 0.2:
            front.paint(
                c.mask(
                    lambda p: p.line(
                        [
                            (cx + part * fw * 0.3, g.top - 0.004),
                            (cx + part * fw * 0.3 + 0.004, hairline),
                        ],
                        0.003,
                    ),
                    blur=0.001,
                ),
                dark,
                0.6,
            )
    if g.coily and style in ("natural", "Messy"):
        _curls(c, front, g, dark, cx, g.top + 0.05, fw + vol, rng, n=160)
    if style == "Messy":
        _strays(c, front, g, col, rng, (g.top - 0.02, hairline + 0.03), fw + vol, 22)

        # uneven fringe over the forehead (stops above the brows)
        def fringe(p: Pen) -> None:
            for k in range(-4, 5):
                x = cx + k * fw * 0.17
                p.poly(
                    [
                        (x - 0.02, hairline - 0.01),
                        (x + 0.02, hairline - 0.01),
                        (x + rng.uniform(-0.01, 0.01), hairline + rng.uniform(0.025, 0.045)),
                    ]
                )

        front.paint(c.mask(fringe), col)

    if style == "Ponytail":
        drape.paint(c.mask(lambda p: _tail(p, g, +1, max(L, 0.8))), col * np.float32(0.92))
        drape.paint(c.mask(lambda p: _tail_lines(p, g, +1, max(L, 0.8)), blur=0.0015), dark, 0.45)
        tie_x, tie_y = cx + fw * 0.95, g.eye_y + 0.005
        front.paint(c.mask(lambda p: p.ellipse(tie_x, tie_y, 0.016, 0.012)), col)
        front.paint(
            c.mask(
                lambda p: p.rect(
                    tie_x - 0.012, tie_y - 0.004, tie_x + 0.014, tie_y + 0.004, radius=0.003
                )
            ),
            (60, 40, 90),
        )
    elif style == "Braid":
        _braid(c, drape, g, col, dark, -1, max(L, 0.85))
    elif style == "Bun":
        by = g.top - 0.045
        back.paint(c.mask(lambda p: p.ellipse(cx, by, 0.062, 0.05)), col)
        back.paint(
            c.mask(
                lambda p: [
                    p.arc(cx, by, 0.062 * t, 0.05 * t, 200, 340, 0.003) for t in (0.4, 0.65, 0.85)
                ],
                blur=0.0015,
            ),
            dark,
            0.6,
        )
        front.paint(
            c.mask(
                lambda p: p.rect(cx - 0.035, g.top - 0.012, cx + 0.035, g.top + 0.0, radius=0.004)
            ),
            shade_rgb(col, g),
        )
    elif L >= 0.9 and style in ("natural", "Messy"):
        for s in (-1, 1):
            drape.paint(c.mask(lambda p, s=s: _lock(p, g, s, L)), col * np.float32(0.95))
            drape.paint(c.mask(lambda p, s=s: _lock_lines(p, g, s, L), blur=0.0015), dark, 0.4)
    return layers


def shade_rgb(col: np.ndarray, g: FaceGeometry) -> tuple[float, float, float]:
    """A hair tie colour that contrasts with the hair at the crown."""
    del col, g
    return (70, 50, 110)


def _lock(p: Pen, g: FaceGeometry, s: int, L: float) -> None:
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


def _lock_lines(p: Pen, g: FaceGeometry, s: int, L: float) -> None:
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


def _tail(p: Pen, g: FaceGeometry, s: int, L: float) -> None:
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


def _tail_lines(p: Pen, g: FaceGeometry, s: int, L: float) -> None:
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


def _braid(
    c: Canvas, layer: Layer, g: FaceGeometry, col: np.ndarray, dark: np.ndarray, s: int, L: float
) -> None:
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


def _curls(
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
    del g

    def curls(p: Pen) -> None:
        for _ in range(n):
            a = rng.uniform(0, 2 * np.pi)
            rr = r * np.sqrt(rng.uniform(0, 1))
            x, y = cx + rr * np.cos(a), cy + rr * 0.86 * np.sin(a)
            p.arc(x, y, 0.008, 0.008, rng.uniform(0, 360), rng.uniform(0, 360) + 200, 0.0022)

    m = c.mask(curls)
    layer.paint(m.times(layer.alpha > 0.5), dark, 0.55)


def _stipple(
    c: Canvas,
    layer: Layer,
    region: Mask,
    dark: np.ndarray,
    rng: np.random.Generator,
    n: int,
    r: float,
    a: float,
) -> None:
    if region.empty:
        return
    h, w = region.a.shape
    ys = rng.uniform(region.y0, region.y0 + h, n) / c.w
    xs = rng.uniform(region.x0, region.x0 + w, n) / c.w

    def dots(p: Pen) -> None:
        for x, y in zip(xs, ys):
            p.ellipse(x, y, r, r)

    layer.paint(c.mask(dots).times(c.full(region)), dark, a)


def _strays(
    c: Canvas,
    layer: Layer,
    g: FaceGeometry,
    col: np.ndarray,
    rng: np.random.Generator,
    yr: tuple[float, float],
    w: float,
    n: int,
) -> None:
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
