"""Colour palettes: skin tones, natural hair and eye colours per ethnicity, named edit colours.

Ranges are broad and overlapping on purpose: an ethnicity shifts the distribution a face's
colours are drawn from, it does not fix them. No feature *shape* depends on ethnicity.
"""

from __future__ import annotations

import numpy as np

RGB = tuple[float, float, float]

#: skin tone anchors per ethnicity; a face blends two neighbours and adds jitter
SKIN: dict[str, list[RGB]] = {
    "Asian": [(238, 206, 178), (226, 190, 156), (212, 172, 136), (198, 156, 120)],
    "African": [(168, 116, 82), (140, 94, 64), (116, 76, 52), (94, 62, 44)],
    "European": [(246, 214, 194), (236, 200, 176), (224, 184, 156), (212, 170, 140)],
    "Middle Eastern": [(226, 186, 150), (212, 168, 130), (196, 150, 112), (178, 132, 98)],
    "Latino": [(230, 188, 150), (214, 168, 128), (196, 148, 108), (172, 124, 88)],
}

#: labels of other protocols' face sets drawn with the palette of a listed ethnicity (a
#: stand-in's colours only; e.g. the Chicago Face Database's race labels)
PALETTE_OF: dict[str, str] = {
    "Black": "African",
    "White": "European",
    "Indian": "Middle Eastern",
    "Mixed-race": "Latino",
}

#: natural base hair colours per ethnicity (weights, colours)
HAIR: dict[str, list[tuple[float, RGB]]] = {
    "Asian": [(0.7, (34, 28, 26)), (0.3, (52, 38, 30))],
    "African": [(0.8, (30, 24, 22)), (0.2, (46, 34, 28))],
    "European": [
        (0.25, (66, 46, 32)),
        (0.25, (102, 72, 46)),
        (0.2, (150, 116, 72)),
        (0.15, (44, 34, 28)),
        (0.1, (122, 64, 38)),
        (0.05, (186, 152, 100)),
    ],
    "Middle Eastern": [(0.6, (36, 28, 24)), (0.4, (58, 40, 30))],
    "Latino": [(0.55, (40, 30, 25)), (0.45, (66, 46, 32))],
}

EYES: dict[str, list[tuple[float, RGB]]] = {
    "Asian": [(0.7, (66, 42, 28)), (0.3, (92, 60, 36))],
    "African": [(0.75, (60, 38, 26)), (0.25, (84, 54, 34))],
    "European": [
        (0.3, (86, 58, 36)),
        (0.3, (74, 112, 150)),
        (0.2, (96, 118, 76)),
        (0.2, (122, 96, 56)),
    ],
    "Middle Eastern": [(0.6, (70, 44, 28)), (0.25, (100, 70, 40)), (0.15, (110, 112, 70))],
    "Latino": [(0.65, (72, 46, 30)), (0.25, (100, 68, 40)), (0.1, (112, 100, 60))],
}

#: hair-colour edits: (colour, sheen colour, sheen strength). Sheen differs from any base.
NAMED_HAIR: dict[str, tuple[RGB, RGB, float]] = {
    "Black": ((12, 12, 16), (120, 135, 170), 0.55),
    "Brown": ((104, 64, 36), (190, 140, 90), 0.35),
    "Blonde": ((222, 186, 118), (255, 240, 200), 0.45),
    "Red": ((170, 62, 28), (240, 140, 80), 0.4),
    "Gray": ((196, 196, 202), (250, 250, 255), 0.45),
}
#: "Unnatural" picks one of these per identity
UNNATURAL: list[tuple[RGB, RGB]] = [
    ((38, 150, 210), (160, 230, 255)),
    ((220, 60, 160), (255, 170, 220)),
    ((120, 60, 200), (200, 160, 255)),
    ((40, 170, 110), (170, 255, 200)),
]

#: greys an ageing head of hair blends towards
SALT_PEPPER: RGB = (150, 146, 142)

#: plain base tops (muted, no pattern)
BASE_TOPS: list[RGB] = [
    (92, 104, 120),
    (120, 120, 124),
    (70, 84, 70),
    (150, 132, 112),
    (96, 78, 92),
    (60, 70, 96),
]

INK: RGB = (36, 46, 66)
METAL_SILVER: RGB = (200, 204, 212)
METAL_GOLD: RGB = (214, 176, 84)


def pick(rng: np.random.Generator, table: list[tuple[float, RGB]]) -> RGB:
    """Weighted choice from a ``(weight, colour)`` table."""
    w = np.array([t[0] for t in table], dtype=np.float64)
    i = int(rng.choice(len(table), p=w / w.sum()))
    return table[i][1]


def jitter(rng: np.random.Generator, rgb: RGB, amount: float) -> RGB:
    """``rgb`` with uniform per-channel noise of +-``amount`` (shared brightness + tint)."""
    b = rng.uniform(-amount, amount)
    t = rng.uniform(-amount / 3, amount / 3, size=3)
    return tuple(float(np.clip(c + b + d, 0, 255)) for c, d in zip(rgb, t))  # type: ignore[return-value]


def skin_tone(rng: np.random.Generator, ethnicity: str) -> RGB:
    """A skin tone: a random point between two adjacent anchors of the ethnicity, jittered."""
    anchors = SKIN.get(ethnicity, SKIN["European"])
    i = int(rng.integers(0, len(anchors) - 1))
    t = float(rng.uniform(0, 1))
    a, b = anchors[i], anchors[i + 1]
    base = tuple(x * (1 - t) + y * t for x, y in zip(a, b))
    return jitter(rng, base, 5)  # type: ignore[arg-type]
