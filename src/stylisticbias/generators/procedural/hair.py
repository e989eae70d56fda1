"""Hair: colour (natural or named), length (bald .. long) and style, as three layers.

``hair_back`` sits behind the head and body (volume behind the skull, hair behind the
shoulders), ``hair_drape`` sits in front of the shoulders but behind the face (long locks,
braids, ponytail tails), ``hair_front`` sits on the skull (crown, hairline, fringe).
Hair is always tucked behind the ears: the ears stay visible.

Modules: ``hair_colour`` (strand texture and colour field), ``hair_shapes`` (the skull cap and
the pieces drawn on it) and this one (:class:`HairLook` and the per-style :func:`render`).
"""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stylisticbias.generators.procedural import hair_shapes as hs
from stylisticbias.generators.procedural.canvas import Canvas, Layer, Pen
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point
from stylisticbias.generators.procedural.hair_colour import colour_field, texture

__all__ = ["NAMED_LENGTH", "HairLook", "colour_field", "render", "shade_rgb", "texture"]

#: hair length edits (0 = bald); base lengths are drawn from bands between these
NAMED_LENGTH = {"Bald": 0.0, "Short": 0.12, "Medium": 0.5, "Long": 1.0}


@dataclass(frozen=True)
class HairLook:
    """What the hair layers depend on."""

    color: str | None  # None = the identity's natural colour; else a Hair color value
    length: float
    style: str  # natural | Messy | Slicked back | Ponytail | Braid | Bun | Afro | Buzz cut | Mohawk
    hidden: bool = False  # covered by a headscarf


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
        hs.curls(c, back, g, dark, cx, acy, r, rng, n=220)
        front.paint(
            c.mask(lambda p: p.smooth(hs.cap(g, 0.05, g.ear_y0 - 0.01, g.hairline - 0.01, 0))), col
        )
        hs.curls(c, front, g, dark, cx, g.top + 0.04, fw * 1.0, rng, n=70)
        return layers

    if style == "Buzz cut":
        m = c.mask(lambda p: p.smooth(hs.cap(g, 0.004, g.ear_y0 + 0.005, g.hairline, 0)))
        front.paint(m, col, 0.55)
        hs.stipple(c, front, m, dark, rng, 900, 0.0022, 0.55)
        return layers

    if style == "Mohawk":
        side = c.mask(lambda p: p.smooth(hs.cap(g, 0.002, g.ear_y0, g.hairline + 0.01, 0)))
        front.paint(side, col, 0.22)
        hs.stipple(c, front, side, dark, rng, 500, 0.002, 0.3)
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
    cap = hs.cap(g, vol, side_y, hairline, part if style == "natural" else 0.0)
    if style == "Messy":
        cap = hs.jagged(cap[:27], cx, g.eye_y, rng, 0.03) + cap[27:]

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
            hs.strays(c, back, g, col, rng, (g.eye_y, end), w, 16)
    if tight:
        back.paint(
            c.mask(lambda p: p.smooth(hs.skull(g, 0.008, g.ear_y0 + 0.03))), col * np.float32(0.85)
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
        hs.curls(c, front, g, dark, cx, g.top + 0.05, fw + vol, rng, n=160)
    if style == "Messy":
        hs.strays(c, front, g, col, rng, (g.top - 0.02, hairline + 0.03), fw + vol, 22)

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
        drape.paint(c.mask(lambda p: hs.tail(p, g, +1, max(L, 0.8))), col * np.float32(0.92))
        drape.paint(c.mask(lambda p: hs.tail_lines(p, g, +1, max(L, 0.8)), blur=0.0015), dark, 0.45)
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
        hs.braid(c, drape, g, col, dark, -1, max(L, 0.85))
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
            drape.paint(c.mask(lambda p, s=s: hs.lock(p, g, s, L)), col * np.float32(0.95))
            drape.paint(c.mask(lambda p, s=s: hs.lock_lines(p, g, s, L), blur=0.0015), dark, 0.4)
    return layers


def shade_rgb(col: np.ndarray, g: FaceGeometry) -> tuple[float, float, float]:
    """A hair tie colour that contrasts with the hair at the crown."""
    del col, g
    return (70, 50, 110)
