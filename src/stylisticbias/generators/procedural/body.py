"""Full-body figure: the base face's head pasted at a fixed scale onto a standing body.

The body canvas is 1 x 2 units (``size`` x ``2 * size`` pixels). The face canvas maps onto it
by ``(x, y) -> (HEAD_X0 + HEAD_SCALE * x, HEAD_SCALE * y)``: the head pixels of a full-body
image are the base face image resized by :data:`HEAD_SCALE`, pasted through the base scene's
head coverage, so the identity (and its hair) is literally the base face's.
"""

# Drawing lambdas run at once inside their loop (B023 is a false positive); drawing
# calls are kept one shape per line for readability (E501).

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from stylisticbias.generators.procedural.canvas import Canvas, Layer, Mask, Pen, shade
from stylisticbias.generators.procedural.geometry import FaceGeometry, Point

HEAD_SCALE = 0.5
HEAD_X0 = 0.25


@dataclass(frozen=True)
class Figure:
    """Key points of a standing figure in body-canvas units."""

    cx: float
    neck_w: float
    neck_top: float
    shoulder_y: float
    shoulder_w: float
    chest_w: float
    waist_y: float
    waist_w: float
    hip_y: float
    hip_w: float
    crotch_y: float
    knee_y: float
    ankle_y: float
    foot_y: float
    thigh_w: float
    calf_w: float
    arm_w: float
    male: bool
    body: float

    def leg(
        self, s: int, y_end: float | None = None, flare: float = 0.0, extra: float = 0.0
    ) -> list[Point]:
        """Outline of one leg (s = -1 left, 1 right) from the hip down to ``y_end``."""
        cx = self.cx
        y_end = self.ankle_y if y_end is None else y_end
        t = (y_end - self.crotch_y) / (self.ankle_y - self.crotch_y)
        w_end = self.thigh_w + (self.calf_w * 0.75 - self.thigh_w) * min(1.0, t) + flare + extra
        x_end = cx + s * (0.055 + 0.01 * self.body)
        return [
            (cx + s * 0.003, self.crotch_y),
            (cx + s * (self.hip_w + extra), self.hip_y),
            (x_end + s * w_end, y_end),
            (x_end - s * w_end, y_end),
        ]

    def arm(self, s: int) -> list[Point]:
        """Centre line of one arm: shoulder, elbow, wrist."""
        cx = self.cx
        return [
            (cx + s * (self.shoulder_w - self.arm_w * 0.6), self.shoulder_y + 0.03),
            (cx + s * (self.waist_w + self.arm_w * 1.1 + 0.01), self.waist_y - 0.02),
            (cx + s * (self.hip_w + self.arm_w * 0.9), self.crotch_y - 0.02),
        ]

    def torso(self, bottom: float, extra: float = 0.0) -> list[Point]:
        """Torso outline from the shoulders to ``bottom``, grown by ``extra``."""
        cx, e = self.cx, extra
        belly = 0.02 * max(self.body, 0)
        r = [
            (cx + self.neck_w * 1.4, self.shoulder_y - 0.015),
            (cx + self.shoulder_w + e, self.shoulder_y + 0.02),
            (cx + self.chest_w + e, self.shoulder_y + 0.14),
            (cx + self.waist_w + e + belly, self.waist_y),
            (cx + self.hip_w + e, min(bottom, self.hip_y)),
            (cx + self.hip_w + e, bottom),
        ]
        left = [(2 * cx - x, y) for x, y in reversed(r)]
        return r + left


def figure(g: FaceGeometry) -> Figure:
    """The body of an identity (body type and gender set the silhouette)."""
    b, m = g.body, g.male
    cx = HEAD_X0 + HEAD_SCALE * g.cx
    waist = {-1.0: 0.095, 0.0: 0.118, 1.0: 0.175}[b] - (0.0 if m else 0.012)
    hip = {-1.0: 0.105, 0.0: 0.128, 1.0: 0.178}[b] + (0.0 if m else 0.018)
    sw = HEAD_SCALE * g.shoulder_w * (0.5 if m else 0.46) + 0.06
    return Figure(
        cx=cx,
        neck_w=HEAD_SCALE * g.neck_w,
        neck_top=HEAD_SCALE * g.jaw_y,
        shoulder_y=HEAD_SCALE * g.shoulder_y - 0.01,
        shoulder_w=sw,
        chest_w=sw - 0.02 + 0.02 * max(b, 0),
        waist_y=0.8,
        waist_w=waist,
        hip_y=0.97,
        hip_w=hip,
        crotch_y=1.06,
        knee_y=1.45,
        ankle_y=1.86,
        foot_y=1.93,
        thigh_w={-1.0: 0.042, 0.0: 0.052, 1.0: 0.074}[b],
        calf_w={-1.0: 0.034, 0.0: 0.04, 1.0: 0.055}[b],
        arm_w={-1.0: 0.026, 0.0: 0.032, 1.0: 0.046}[b],
        male=m,
        body=b,
    )


def skin_layer(c: Canvas, f: Figure, skin: tuple[float, float, float]) -> Layer:
    """Neck, arms, hands and legs in skin tone (garments are drawn over them)."""
    L = c.layer()
    cx = f.cx
    L.paint(
        c.mask(
            lambda p: p.poly(
                [
                    (cx - f.neck_w, f.neck_top),
                    (cx + f.neck_w, f.neck_top),
                    (cx + f.neck_w * 1.3, f.shoulder_y + 0.02),
                    (cx - f.neck_w * 1.3, f.shoulder_y + 0.02),
                ]
            )
        ),
        shade(skin, 0.9),
    )
    L.paint(c.mask(lambda p: p.smooth(f.torso(f.crotch_y))), shade(skin, 0.92))

    def limbs(p: Pen) -> None:
        for s in (-1, 1):
            p.line(f.arm(s), f.arm_w * 1.6)
            x, y = f.arm(s)[-1]
            p.ellipse(x, y + 0.035, f.arm_w * 0.7, 0.04)
            p.poly(f.leg(s))

    L.paint(c.mask(limbs), skin)
    L.paint(
        c.mask(lambda p: [p.line(f.arm(s), f.arm_w * 0.5) for s in (-1, 1)], blur=0.01),
        shade(skin, 0.85),
        0.4,
    )
    return L


def head_paste(base: Image.Image, coverage: np.ndarray, c: Canvas) -> Layer:
    """The base face resized by HEAD_SCALE, as a premultiplied layer through its head coverage."""
    size = base.width
    n = round(size * HEAD_SCALE)
    face = (
        np.asarray(base.convert("RGB").resize((n, n), Image.Resampling.LANCZOS), np.float32) / 255
    )
    cov_im = Image.fromarray((np.clip(coverage, 0, 1) * 255 + 0.5).astype(np.uint8))
    cov = np.asarray(cov_im.resize((n, n), Image.Resampling.BILINEAR), np.float32) / 255
    L = c.layer()
    x0 = round(HEAD_X0 * c.w)
    m = Mask(cov, 0, x0)
    L.paint(m, _pad(face, c, x0))
    return L


def _pad(face: np.ndarray, c: Canvas, x0: int) -> np.ndarray:
    out = np.zeros((c.h, c.w, 3), np.float32)
    n = face.shape[0]
    out[:n, x0 : x0 + n] = face
    return out


def head_box(size: int) -> tuple[int, int, int]:
    """(x0, y0, n): where the resized base face sits in a full-body image of width ``size``."""
    return round(HEAD_X0 * size), 0, round(size * HEAD_SCALE)
