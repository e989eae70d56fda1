"""Supersampled masks, premultiplied RGBA layers and exact layer compositing.

Drawing happens in *units*: x in [0, 1] spans the image width, y runs down at the same scale
(a face canvas is 1 x 1 unit, a full-body canvas 1 x 2). A :class:`Pen` draws coverage shapes
onto a 2x supersampled greyscale image; :meth:`Canvas.mask` box-reduces it to a soft
:class:`Mask` cropped to its bounding box. A :class:`Layer` is a premultiplied RGBA float
image that masks are painted into with a colour (or a per-pixel colour field).

Compositing is ``out = layer.rgb + out * (1 - layer.alpha)`` restricted to the layer's
bounding box. Where a layer's alpha is 0 this is the identity in floating point, so swapping
one layer for another leaves every pixel that neither version covers bit-identical -- the
property the "an edit changes only its attribute's pixels" contract rests on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

Point = tuple[float, float]
SUPERSAMPLE = 2


def catmull_rom(points: Sequence[Point], *, closed: bool, steps: int = 8) -> list[Point]:
    """A smooth curve through ``points`` (centripetal-free uniform Catmull-Rom)."""
    pts = np.asarray(points, dtype=np.float64)
    n = len(pts)
    if n < 3:
        return [tuple(p) for p in pts]  # type: ignore[misc]
    if closed:
        ext = np.vstack([pts[-1], pts, pts[0], pts[1]])
        segs = n
    else:
        ext = np.vstack([2 * pts[0] - pts[1], pts, 2 * pts[-1] - pts[-2]])
        segs = n - 1
    t = np.linspace(0, 1, steps, endpoint=False)[None, :, None]
    t2, t3 = t * t, t * t * t
    p0, p1, p2, p3 = (ext[k : k + segs][:, None, :] for k in range(4))
    seg = 0.5 * (
        2 * p1
        + (-p0 + p2) * t
        + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t2
        + (-p0 + 3 * p1 - 3 * p2 + p3) * t3
    )
    out = seg.reshape(-1, 2).tolist()
    if not closed:
        out.append(pts[-1].tolist())
    return [(x, y) for x, y in out]


def bezier(p0: Point, p1: Point, p2: Point, steps: int = 16) -> list[Point]:
    """Points along a quadratic Bezier curve from ``p0`` to ``p2`` with control ``p1``."""
    t = np.linspace(0, 1, steps)[:, None]
    a, b, c = (np.asarray(p, dtype=np.float64) for p in (p0, p1, p2))
    pts = (1 - t) ** 2 * a + 2 * (1 - t) * t * b + t * t * c
    return [tuple(p) for p in pts]  # type: ignore[misc]


class Pen:
    """Draws coverage (0-255) shapes in units onto a supersampled greyscale image."""

    def __init__(self, draw: ImageDraw.ImageDraw, scale: float) -> None:
        self.d = draw
        self.s = scale

    def _p(self, pts: Sequence[Point]) -> list[tuple[float, float]]:
        s = self.s
        return [(x * s, y * s) for x, y in pts]

    def ellipse(self, cx: float, cy: float, rx: float, ry: float, fill: int = 255) -> None:
        """Filled axis-aligned ellipse."""
        s = self.s
        self.d.ellipse(((cx - rx) * s, (cy - ry) * s, (cx + rx) * s, (cy + ry) * s), fill=fill)

    def ring(
        self, cx: float, cy: float, rx: float, ry: float, width: float, fill: int = 255
    ) -> None:
        """Ellipse outline of ``width`` units."""
        s = self.s
        self.d.ellipse(
            ((cx - rx) * s, (cy - ry) * s, (cx + rx) * s, (cy + ry) * s),
            outline=fill,
            width=max(1, round(width * s)),
        )

    def arc(
        self,
        cx: float,
        cy: float,
        rx: float,
        ry: float,
        start: float,
        end: float,
        width: float,
        fill: int = 255,
    ) -> None:
        """Elliptic arc (degrees, clockwise from 3 o'clock)."""
        s = self.s
        self.d.arc(
            ((cx - rx) * s, (cy - ry) * s, (cx + rx) * s, (cy + ry) * s),
            start,
            end,
            fill=fill,
            width=max(1, round(width * s)),
        )

    def poly(self, pts: Sequence[Point], fill: int = 255) -> None:
        """Filled polygon."""
        self.d.polygon(self._p(pts), fill=fill)

    def smooth(self, pts: Sequence[Point], fill: int = 255) -> None:
        """Filled smooth closed shape through ``pts``."""
        self.d.polygon(self._p(catmull_rom(pts, closed=True)), fill=fill)

    def line(
        self, pts: Sequence[Point], width: float, fill: int = 255, *, round_caps: bool = True
    ) -> None:
        """Polyline of ``width`` units with round joints (and round caps)."""
        w = max(1, round(width * self.s))
        p = self._p(pts)
        self.d.line(p, fill=fill, width=w, joint="curve")
        if round_caps and w > 2:
            r = w / 2
            for x, y in (p[0], p[-1]):
                self.d.ellipse((x - r, y - r, x + r, y + r), fill=fill)

    def curve(self, pts: Sequence[Point], width: float, fill: int = 255) -> None:
        """Smooth open curve through ``pts``."""
        self.line(catmull_rom(pts, closed=False), width, fill)

    def rect(
        self, x0: float, y0: float, x1: float, y1: float, fill: int = 255, radius: float = 0
    ) -> None:
        """Filled (optionally rounded) rectangle."""
        s = self.s
        x0, x1 = min(x0, x1), max(x0, x1)
        y0, y1 = min(y0, y1), max(y0, y1)
        box = (x0 * s, y0 * s, x1 * s, y1 * s)
        if radius > 0:
            self.d.rounded_rectangle(box, radius=radius * s, fill=fill)
        else:
            self.d.rectangle(box, fill=fill)

    def rounded_outline(
        self,
        x0: float,
        y0: float,
        x1: float,
        y1: float,
        radius: float,
        width: float,
        fill: int = 255,
    ) -> None:
        """Rounded rectangle outline."""
        s = self.s
        self.d.rounded_rectangle(
            (x0 * s, y0 * s, x1 * s, y1 * s),
            radius=radius * s,
            outline=fill,
            width=max(1, round(width * s)),
        )


@dataclass
class Mask:
    """Soft coverage in [0, 1] over the box ``[y0:y0+h, x0:x0+w]`` of the canvas."""

    a: np.ndarray
    y0: int
    x0: int

    @property
    def empty(self) -> bool:
        """True when nothing was drawn."""
        return self.a.size == 0

    @property
    def box(self) -> tuple[slice, slice]:
        """Slices of the canvas this mask covers."""
        h, w = self.a.shape
        return slice(self.y0, self.y0 + h), slice(self.x0, self.x0 + w)

    def times(self, field: np.ndarray) -> Mask:
        """This mask multiplied by a full-canvas scalar field (e.g. clipped to the face)."""
        if self.empty:
            return self
        return Mask(self.a * field[self.box], self.y0, self.x0)


class Canvas:
    """A ``width`` x ``height`` pixel drawing surface addressed in units of its width."""

    def __init__(self, width: int, height: int, ss: int = SUPERSAMPLE) -> None:
        self.w, self.h, self.ss = width, height, ss
        self.scale = float(width * ss)
        ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
        #: unit coordinates of pixel centres
        self.X = (xs + 0.5) / width
        self.Y = (ys + 0.5) / width

    def mask(self, fn: Callable[[Pen], None], blur: float = 0.0) -> Mask:
        """Draw with ``fn(pen)`` and return the reduced (optionally blurred, in units) coverage."""
        im = Image.new("L", (self.w * self.ss, self.h * self.ss), 0)
        fn(Pen(ImageDraw.Draw(im), self.scale))
        bb = im.getbbox()
        if bb is None:
            return Mask(np.zeros((0, 0), np.float32), 0, 0)
        ss = self.ss
        x0, y0 = bb[0] // ss, bb[1] // ss
        x1, y1 = -(-bb[2] // ss), -(-bb[3] // ss)
        small = im.crop((x0 * ss, y0 * ss, x1 * ss, y1 * ss)).reduce(ss)
        if blur > 0:
            r = blur * self.w
            pad = int(np.ceil(3 * r)) + 1
            nx0, ny0 = max(0, x0 - pad), max(0, y0 - pad)
            nx1, ny1 = min(self.w, x1 + pad), min(self.h, y1 + pad)
            big = Image.new("L", (nx1 - nx0, ny1 - ny0), 0)
            big.paste(small, (x0 - nx0, y0 - ny0))
            small = big.filter(ImageFilter.GaussianBlur(r))
            x0, y0 = nx0, ny0
        return Mask(np.asarray(small, dtype=np.float32) * (1.0 / 255.0), y0, x0)

    def full(self, m: Mask) -> np.ndarray:
        """A mask as a full-canvas array."""
        out = np.zeros((self.h, self.w), np.float32)
        if not m.empty:
            out[m.box] = m.a
        return out

    def layer(self) -> Layer:
        """A new transparent layer of this canvas's size."""
        return Layer(self.h, self.w)


Color = tuple[float, float, float] | np.ndarray


class Layer:
    """Premultiplied RGBA float32 image with the bounding box of what was painted."""

    def __init__(self, h: int, w: int) -> None:
        self.rgba = np.zeros((h, w, 4), np.float32)
        self.bbox: tuple[int, int, int, int] | None = None  # y0, y1, x0, x1

    def paint(self, m: Mask, color: Color, opacity: float = 1.0) -> Layer:
        """Paint ``color`` (0-255 RGB, or a full-canvas HxWx3 0-1 field) through mask ``m``."""
        if m.empty or opacity <= 0:
            return self
        sy, sx = m.box
        a = (m.a * np.float32(opacity))[..., None]
        if isinstance(color, np.ndarray) and color.ndim == 3:
            col = color[sy, sx]
        else:
            col = np.asarray(color, np.float32) * np.float32(1 / 255)
        region = self.rgba[sy, sx]
        region[..., :3] = col * a + region[..., :3] * (1 - a)
        region[..., 3:] = a + region[..., 3:] * (1 - a)
        bb = (sy.start, sy.stop, sx.start, sx.stop)
        if self.bbox is None:
            self.bbox = bb
        else:
            o = self.bbox
            self.bbox = (min(o[0], bb[0]), max(o[1], bb[1]), min(o[2], bb[2]), max(o[3], bb[3]))
        return self

    @property
    def alpha(self) -> np.ndarray:
        """Full-canvas alpha."""
        return self.rgba[..., 3]


def over(dst: np.ndarray, layer: Layer) -> None:
    """Composite ``layer`` over the opaque RGB float image ``dst`` in place (bbox only)."""
    if layer.bbox is None:
        return
    y0, y1, x0, x1 = layer.bbox
    src = layer.rgba[y0:y1, x0:x1]
    region = dst[y0:y1, x0:x1]
    region *= 1 - src[..., 3:]
    region += src[..., :3]


def to_uint8(rgb: np.ndarray) -> np.ndarray:
    """Float RGB in [0, 1] to uint8 (round half up)."""
    return (np.clip(rgb, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


def shade(rgb: Sequence[float], factor: float) -> tuple[float, float, float]:
    """``rgb`` scaled by ``factor`` (darker below 1), clipped to 0-255."""
    return tuple(float(min(255.0, max(0.0, c * factor))) for c in rgb)  # type: ignore[return-value]


def mix(a: Sequence[float], b: Sequence[float], t: float) -> tuple[float, float, float]:
    """Linear blend of two RGB colours (``t`` = share of ``b``)."""
    return tuple(float(x * (1 - t) + y * t) for x, y in zip(a, b))  # type: ignore[return-value]
