"""The eleven fashion styles as garments drawn over the full-body figure.

Modules: ``garments`` (:class:`Outfit`, the garment pieces), ``fashion_tailored`` and
``fashion_casual`` (one drawing function per style) and this one (the style table and
:func:`render`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stylisticbias.generators.procedural import fashion_casual as casual
from stylisticbias.generators.procedural import fashion_tailored as tailored
from stylisticbias.generators.procedural.body import Figure
from stylisticbias.generators.procedural.canvas import Canvas, Layer
from stylisticbias.generators.procedural.fashion_casual import o_skin
from stylisticbias.generators.procedural.garments import BLACK, DENIM, RGB, WHITE, Outfit

__all__ = ["BLACK", "DENIM", "RGB", "STYLES", "WHITE", "Outfit", "o_skin", "render"]

#: style value -> function drawing it (``(outfit, skin colour, rng) -> None``)
STYLES: dict[str, Callable[[Outfit, RGB, np.random.Generator], None]] = {
    "Professional / Business formal": tailored.business_formal,
    "Formal / Evening wear": tailored.evening_wear,
    "Casual": casual.casual,
    "Smart casual": tailored.smart_casual,
    "Sporty / Athletic wear": casual.sporty,
    "Streetwear": casual.streetwear,
    "Functional / outdoor wear": casual.outdoor,
    "Luxury / High fashion": tailored.luxury,
    "Vintage / Retro": tailored.vintage,
    "Worn / Distressed clothing": casual.worn,
    "Daring / Provocative": casual.daring,
}


def render(c: Canvas, f: Figure, style: str, skin: RGB, seed: int) -> Layer:
    """Draw one fashion style onto a figure."""
    rng = np.random.default_rng(seed)
    o = Outfit(c, f, rng)
    draw = STYLES.get(style)
    if draw is None:
        raise ValueError(f"unknown fashion style {style!r}")
    draw(o, skin, rng)
    return o.L
