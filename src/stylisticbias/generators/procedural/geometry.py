"""Face geometry and identity colours from a :class:`FaceSpec` (demographic cell + seed).

All coordinates are in units of the face canvas width (the face canvas is 1 x 1). The
demographic cell sets the tendencies (age: wrinkles, greying, sagging; gender: jaw, brows,
base hair length; ethnicity: colour palettes only; body type: face, cheek, neck and shoulder
width); the identity seed varies everything within them.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from stylisticbias.generators.base import FaceSpec
from stylisticbias.generators.procedural import palette
from stylisticbias.generators.procedural.palette import RGB

AGES = {"young adult": 0.0, "middle-aged adult": 0.5, "elderly": 1.0}
#: other protocols' spellings of the same age groups (e.g. the FACES database's)
AGES.update({"young": 0.0, "middle-aged": 0.5, "old": 1.0})
BODY = {"thin": -1.0, "normal": 0.0, "obese": 1.0}

Point = tuple[float, float]


def identity_rng(spec: FaceSpec, stream: str = "face") -> np.random.Generator:
    """A generator seeded by the identity seed, the demographic cell and a named stream."""
    cell = f"{spec.age}|{spec.gender}|{spec.ethnicity}|{spec.body_type}|{stream}"
    return np.random.default_rng([spec.seed & 0xFFFFFFFF, zlib.crc32(cell.encode())])


@dataclass(frozen=True)
class FaceGeometry:
    """Everything the drawing modules need to know about one identity."""

    male: bool
    age: float  # 0 young, 0.5 middle-aged, 1 elderly
    body: float  # -1 thin, 0 normal, 1 obese
    cx: float
    top: float  # skull top
    chin: float
    fw: float  # face half-width at the cheekbones
    jaw_w: float
    jaw_y: float
    chin_w: float
    eye_y: float
    eye_dx: float
    eye_w: float
    eye_h: float
    brow_y: float
    brow_w: float
    brow_thick: float
    brow_arch: float
    nose_y: float  # bottom of the nose
    nose_w: float
    mouth_y: float
    mouth_w: float
    lip_up: float
    lip_lo: float
    ear_y0: float
    ear_y1: float
    ear_w: float
    neck_w: float
    shoulder_y: float
    shoulder_w: float
    hairline: float
    cheek: float  # cheek fullness
    skin: RGB
    hair: RGB  # natural base hair colour (already greyed with age)
    brow_rgb: RGB
    iris: RGB
    lip: RGB
    top_rgb: RGB
    hair_len: float  # base hair length (0 short .. 1 long); never equal to a named length
    hair_vol: float
    hair_part: float  # -1 left .. 1 right
    coily: bool  # tightly curled hair texture
    receding: float  # 0 .. 1 receding hairline (older men)
    shadow: float  # natural beard shadow strength (men)
    unnatural: int  # index into palette.UNNATURAL for this identity
    accent: int  # identity-stable choice index for accessories and tattoos

    @property
    def skull_cy(self) -> float:
        """Centre of the upper-head ellipse."""
        return self.eye_y

    def outline(self) -> list[Point]:
        """Closed control polygon of the face (skull + cheeks + jaw + chin), clockwise."""
        cx, top, fw = self.cx, self.top, self.fw
        ry = self.eye_y - top
        right: list[Point] = []
        for deg in (-90, -65, -40, -18):
            a = np.radians(deg)
            right.append((cx + fw * np.cos(a), self.eye_y + ry * np.sin(a)))
        right.append((cx + fw * 1.0, self.eye_y + 0.02))
        right.append((cx + fw * 0.96 + self.cheek * 0.6, self.nose_y))
        right.append((cx + self.jaw_w, self.jaw_y))
        right.append((cx + self.chin_w, self.chin - 0.012))
        pts = [*right, (cx, self.chin)]
        left = [(2 * cx - x, y) for x, y in reversed(right[1:])]
        return pts + left

    def lower_face(self) -> list[Point]:
        """Control polygon of the beard area (cheeks below the cheekbones, jaw, chin)."""
        cx = self.cx
        r: list[Point] = [
            (cx + self.fw * 0.98, self.eye_y + 0.05),
            (cx + self.fw * 0.96 + self.cheek * 0.6, self.nose_y),
            (cx + self.jaw_w, self.jaw_y),
            (cx + self.chin_w, self.chin - 0.012),
        ]
        bottom = [(cx, self.chin)]
        left = [(2 * cx - x, y) for x, y in reversed(r)]
        inner = [
            (cx - self.fw * 0.62, self.nose_y - 0.035),
            (cx - self.nose_w * 1.3, self.nose_y + 0.004),
            (cx, self.nose_y + 0.006),
            (cx + self.nose_w * 1.3, self.nose_y + 0.004),
            (cx + self.fw * 0.62, self.nose_y - 0.035),
        ]
        return r + bottom + left + inner


def face_geometry(spec: FaceSpec) -> FaceGeometry:
    """Derive the geometry and colours of one identity (deterministic in ``spec``)."""
    rng = identity_rng(spec)
    male = spec.gender == "male"
    age = AGES.get(spec.age, 0.0)
    body = BODY.get(spec.body_type, 0.0)
    u = rng.uniform

    fw = 0.178 + 0.017 * body + (0.008 if male else 0.0) + u(-0.008, 0.008)
    top = 0.17 + u(-0.008, 0.008)
    eye_y = 0.418 + u(-0.006, 0.006)
    chin = 0.665 + 0.01 * max(body, 0) + (0.006 if male else -0.004) + u(-0.01, 0.01)
    cheek = max(0.0, 0.014 * body) + u(0, 0.006) + 0.004 * age
    jaw_w = fw * ((0.80 if male else 0.70) + 0.1 * max(body, 0) + 0.04 * age + u(-0.04, 0.04))
    jaw_y = eye_y + 0.16 + 0.015 * age + u(-0.01, 0.01)
    chin_w = fw * ((0.36 if male else 0.28) + 0.12 * max(body, 0) + u(-0.05, 0.05))
    nose_y = eye_y + 0.105 + u(-0.008, 0.01) + 0.006 * age
    mouth_y = nose_y + 0.052 + u(-0.004, 0.006) + 0.004 * age
    eye_w = 0.036 + u(-0.003, 0.004)
    eye_dx = 0.074 + u(-0.006, 0.007)
    hair_len = (
        float(u(0.22, 0.28)) if male else float(u(0.64, 0.74))
    )  # men: natural short; women: shoulder length
    ethnicity = palette.PALETTE_OF.get(spec.ethnicity, spec.ethnicity)
    hair = palette.pick(rng, palette.HAIR.get(ethnicity, palette.HAIR["European"]))
    hair = palette.jitter(rng, hair, 6)
    grey = float(np.clip(age * u(0.35, 0.75) + (u(0.0, 0.2) if age >= 0.5 else 0.0), 0, 0.8))
    hair_aged = tuple(h * (1 - grey) + g * grey for h, g in zip(hair, palette.SALT_PEPPER))
    brow = tuple(c * 0.85 for c in hair_aged)
    skin = palette.skin_tone(rng, ethnicity)
    lip = (skin[0] * 0.82, skin[1] * 0.6, skin[2] * 0.6)
    coily_p = {"African": 0.85}.get(ethnicity, 0.08)
    return FaceGeometry(
        male=male,
        age=age,
        body=body,
        cx=0.5 + u(-0.004, 0.004),
        top=top,
        chin=chin,
        fw=fw,
        jaw_w=jaw_w,
        jaw_y=jaw_y,
        chin_w=chin_w,
        eye_y=eye_y,
        eye_dx=eye_dx,
        eye_w=eye_w,
        eye_h=eye_w * (0.42 + u(-0.05, 0.06)) * (1 - 0.08 * age),
        brow_y=eye_y - 0.038 - u(0, 0.008),
        brow_w=eye_w * (1.25 + u(0, 0.15)),
        brow_thick=(0.011 if male else 0.0075) + u(-0.0015, 0.002),
        brow_arch=u(0.004, 0.012) + (0.0 if male else 0.004),
        nose_y=nose_y,
        nose_w=0.026 + u(-0.003, 0.005) + 0.002 * max(body, 0),
        mouth_y=mouth_y,
        mouth_w=0.045 + u(-0.004, 0.006),
        lip_up=0.009 + u(-0.002, 0.003) + (0.0 if male else 0.002) - 0.002 * age,
        lip_lo=0.012 + u(-0.002, 0.004) + (0.0 if male else 0.002) - 0.002 * age,
        ear_y0=eye_y - 0.012,
        ear_y1=nose_y + 0.01 + 0.008 * age,
        ear_w=0.036 + u(-0.003, 0.004),
        neck_w=0.072 + 0.018 * body + (0.01 if male else 0.0) + u(-0.004, 0.004),
        shoulder_y=0.84 + u(-0.01, 0.01) - 0.01 * max(body, 0),
        shoulder_w=0.39 + 0.045 * body + (0.03 if male else 0.0) + u(-0.01, 0.01),
        hairline=top + 0.085 + u(-0.01, 0.01),
        cheek=cheek,
        skin=skin,
        hair=hair_aged,  # type: ignore[arg-type]
        brow_rgb=brow,  # type: ignore[arg-type]
        iris=palette.jitter(
            rng, palette.pick(rng, palette.EYES.get(ethnicity, palette.EYES["European"])), 6
        ),
        lip=lip,
        top_rgb=palette.BASE_TOPS[int(rng.integers(len(palette.BASE_TOPS)))],
        hair_len=hair_len,
        hair_vol=0.022 + u(0, 0.016),
        hair_part=float(rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0])),
        coily=bool(rng.uniform() < coily_p),
        receding=float(u(0, 1) * age) if male else 0.0,
        shadow=float(u(0.10, 0.2)) if male else 0.0,
        unnatural=int(rng.integers(len(palette.UNNATURAL))),
        accent=int(rng.integers(0, 1 << 16)),
    )
