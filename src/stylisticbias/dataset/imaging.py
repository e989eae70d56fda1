"""One stated rule for turning any decoded image into the 8-bit RGB a judge sees.

Pillow's ``Image.convert("RGB")`` clips instead of scaling: a 16-bit grayscale PNG (mode
``I;16``/``I``, values 0-65535) comes out almost pure white, and an image with an alpha channel
loses it (transparent pixels show whatever colour they happen to hold). The rule here:

* 16-bit grayscale (``I;16``, ``I;16B``, ``I;16L``, ``I;16N``, ``I``): scaled linearly from
  0-65535 to 0-255 (``value // 257``; ``I`` values outside 0-65535 are clipped first), then
  grey -> RGB;
* 32-bit float grayscale (``F``): refused (no scale is implied by the file);
* alpha (``RGBA``, ``LA``, ``PA``, ``La``, ``RGBa``, or a palette/grayscale image with a
  transparency entry): composited on an opaque **white** background (:data:`BACKGROUND`);
* every other mode (``RGB``, ``L``, ``P``, ``1``, ``CMYK``, ``YCbCr``...): Pillow's own
  conversion, which is exact for them.

:func:`to_rgb` applies it; :func:`conversion_note` says, in a few words, what it did to an image
of a given mode (None for a plain conversion), for the import's warnings.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from stylisticbias.errors import StylisticBiasError

#: The background an image with an alpha channel is composited on.
BACKGROUND = (255, 255, 255)

SIXTEEN_BIT = frozenset({"I;16", "I;16B", "I;16L", "I;16N", "I"})
ALPHA = frozenset({"RGBA", "LA", "PA", "La", "RGBa"})


def has_alpha(im: Image.Image) -> bool:
    """Whether ``im`` carries transparency (an alpha band or a transparency entry)."""
    return im.mode in ALPHA or (im.mode in ("P", "L", "RGB") and "transparency" in im.info)


def conversion_note(im: Image.Image) -> str | None:
    """What :func:`to_rgb` does to ``im`` beyond an exact conversion (None if nothing)."""
    if im.mode in SIXTEEN_BIT:
        return "16-bit grayscale scaled to 8 bits (value // 257)"
    if im.mode == "F":
        return "32-bit float grayscale: refused"
    if has_alpha(im):
        return "alpha channel composited on white"
    return None


def to_rgb(im: Image.Image) -> Image.Image:
    """``im`` as 8-bit RGB by the module's rule (a loaded image; raises on mode ``F``)."""
    if im.mode == "RGB" and "transparency" not in im.info:
        return im
    if im.mode in SIXTEEN_BIT:
        a = np.asarray(im, dtype=np.int64)
        grey = (np.clip(a, 0, 65535) // 257).astype(np.uint8)
        return Image.fromarray(grey).convert("RGB")
    if im.mode == "F":
        raise StylisticBiasError(
            "32-bit float grayscale image: no scale is implied by the file; save it as 8- or 16-bit"
        )
    if has_alpha(im):
        rgba = im.convert("RGBA")
        out = Image.new("RGB", rgba.size, BACKGROUND)
        out.paste(rgba, mask=rgba.getchannel("A"))
        return out
    return im.convert("RGB")
