"""A face as an ordered stack of layers; a look (base or edited) picks each layer's version.

Every layer depends on a few fields of :class:`Look`. A single-attribute edit changes one
field, so only the layers that depend on it are redrawn; the others are the very same cached
objects, and compositing starts from the cached base composite just below the first changed
layer. Because compositing a transparent pixel is the identity, every pixel that neither the
base nor the edited version of the changed layers covers is bit-identical to the base image.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from stylisticbias.benchmark import VariationValue
from stylisticbias.generators.base import FaceSpec
from stylisticbias.generators.procedural import accessories, face, facial_hair, hair, makeup, skin
from stylisticbias.generators.procedural.canvas import Canvas, Layer, over, to_uint8
from stylisticbias.generators.procedural.geometry import FaceGeometry, face_geometry, identity_rng

#: layer stack, bottom to top
LAYERS: tuple[str, ...] = (
    "background",
    "hair_back",
    "body",
    "hair_drape",
    "head",
    "skin_marks",
    "features",
    "makeup",
    "lips",
    "facial_hair",
    "tattoo",
    "hair_front",
    "piercings",
    "eyewear",
    "headwear",
)
HAIR_LAYERS = ("hair_back", "hair_drape", "hair_front")
#: layers whose pixels belong to the head in the full-body paste (everything but these)
NOT_HEAD = ("background", "body")


@dataclass(frozen=True)
class Look:
    """The state of every editable attribute (None = as the identity is by default)."""

    hair_color: str | None = None
    hair_length: float = 0.3
    hair_style: str = "natural"
    skin_marks: str | None = None
    facial_hair: str | None = None
    eyewear: str | None = None
    makeup: str | None = None
    lips: str | None = None
    piercings: str | None = None
    tattoo: str | None = None
    headwear: str | None = None

    def hair(self) -> hair.HairLook:
        """What the hair layers see."""
        return hair.HairLook(
            self.hair_color, self.hair_length, self.hair_style, hidden=self.headwear == "Headscarf"
        )


#: Table 10 attribute -> Look field it sets
ATTRIBUTE_FIELD: dict[str, str] = {
    "Skin irreg.": "skin_marks",
    "Hair color": "hair_color",
    "Hair length": "hair_length",
    "Hair style": "hair_style",
    "Facial hair": "facial_hair",
    "Eyewear": "eyewear",
    "Makeup": "makeup",
    "Lip makeup": "lips",
    "Piercings": "piercings",
    "Tattoos": "tattoo",
    "Accessories": "headwear",
}

#: Look field -> layers that depend on it
FIELD_LAYERS: dict[str, tuple[str, ...]] = {
    "hair_color": HAIR_LAYERS,
    "hair_length": HAIR_LAYERS,
    "hair_style": HAIR_LAYERS,
    "skin_marks": ("skin_marks",),
    "facial_hair": ("facial_hair",),
    "eyewear": ("eyewear",),
    "makeup": ("makeup",),
    "lips": ("lips",),
    "piercings": ("piercings",),
    "tattoo": ("tattoo",),
    "headwear": ("headwear", *HAIR_LAYERS),
}


def base_look(g: FaceGeometry) -> Look:
    """The identity's unedited look."""
    return Look(hair_length=g.hair_len)


def apply_variation(look: Look, v: VariationValue) -> Look:
    """``look`` with the one field ``v`` edits set (``ValueError`` for unknown attributes)."""
    fld = ATTRIBUTE_FIELD.get(v.attribute)
    if fld is None:
        raise ValueError(f"the procedural face scene cannot render attribute {v.attribute!r}")
    value: Any = v.value
    if fld == "hair_length":
        if v.value not in hair.NAMED_LENGTH:
            raise ValueError(
                f"unknown hair length {v.value!r}; valid: {', '.join(hair.NAMED_LENGTH)}"
            )
        value = hair.NAMED_LENGTH[v.value]
    return replace(look, **{fld: value})


@dataclass
class FaceScene:
    """The cached layers of one identity at one size."""

    spec: FaceSpec
    size: int
    g: FaceGeometry = field(init=False)
    c: Canvas = field(init=False)

    def __post_init__(self) -> None:
        self.g = face_geometry(self.spec)
        self.c = Canvas(self.size, self.size)
        seeds = identity_rng(self.spec, "textures").integers(0, 2**31, size=4)
        self.skin = face.skin_field(self.c, self.g, int(seeds[0]))
        self.hair_tex = hair.texture(self.c, int(seeds[1]))
        self.base = base_look(self.g)
        self._cache: dict[tuple[str, Any], Any] = {}
        self._prefix: list[np.ndarray] | None = None
        self._base_img: np.ndarray | None = None

    # ---- layers --------------------------------------------------------------------------
    def _get(self, key: tuple[str, Any], make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def layer(self, name: str, look: Look) -> Layer:
        """One layer's version for ``look`` (cached by the fields it depends on)."""
        c, g = self.c, self.g
        if name in HAIR_LAYERS:
            hl = look.hair()
            return self._get(("hair", hl), lambda: hair.render(c, g, hl, self.hair_tex, self.skin))[
                name
            ]
        if name == "background":
            return self._get((name, None), lambda: face.background(c))
        if name == "body":
            return self._get((name, None), lambda: face.body(c, g, self.skin))
        if name == "head":
            return self._get((name, None), lambda: face.head(c, g, self.skin))
        if name == "features":
            return self._get((name, None), lambda: face.features(c, g))
        value = getattr(look, name if name != "skin_marks" else "skin_marks")
        makers: dict[str, Callable[[], Layer]] = {
            "skin_marks": lambda: skin.marks(c, g, value),
            "tattoo": lambda: skin.tattoo(c, g, value),
            "makeup": lambda: makeup.makeup(c, g, value),
            "lips": lambda: makeup.lips(c, g, value),
            "facial_hair": lambda: facial_hair.render(c, g, value, self.skin),
            "eyewear": lambda: accessories.eyewear(c, g, value),
            "piercings": lambda: accessories.piercings(c, g, value),
            "headwear": lambda: accessories.headwear(c, g, value),
        }
        return self._get((name, value), makers[name])

    def layers(self, look: Look) -> list[Layer]:
        """The whole stack for ``look``, bottom to top."""
        return [self.layer(n, look) for n in LAYERS]

    # ---- compositing ---------------------------------------------------------------------
    def _base_prefix(self) -> list[np.ndarray]:
        if self._prefix is None:
            out = np.ones((self.c.h, self.c.w, 3), np.float32)
            prefix = [out.copy()]
            for lay in self.layers(self.base):
                over(out, lay)
                prefix.append(out.copy())
            self._prefix = prefix
        return self._prefix

    def render(self, look: Look | None = None) -> np.ndarray:
        """The composited uint8 RGB image for ``look`` (default: the base face)."""
        if look is None or look == self.base:
            if self._base_img is None:
                self._base_img = to_uint8(self._base_prefix()[-1])
            return self._base_img
        base_layers = self.layers(self.base)
        new_layers = self.layers(look)
        first = next(i for i, (a, b) in enumerate(zip(base_layers, new_layers)) if a is not b)
        out = self._base_prefix()[first].copy()
        for lay in new_layers[first:]:
            over(out, lay)
        return to_uint8(out)

    def changed_mask(self, look: Look) -> np.ndarray:
        """Pixels any changed layer covers, in the base or in ``look`` (bool HxW)."""
        mask = np.zeros((self.c.h, self.c.w), bool)
        for a, b in zip(self.layers(self.base), self.layers(look)):
            if a is not b:
                mask |= a.alpha > 0
                mask |= b.alpha > 0
        return mask

    def head_coverage(self) -> np.ndarray:
        """Visible share (0-1) of each base pixel that belongs to the head (for the body paste)."""
        cov = np.zeros((self.c.h, self.c.w), np.float32)
        for name, lay in zip(LAYERS, self.layers(self.base)):
            a = lay.alpha
            cov = cov * (1 - a) if name in NOT_HEAD else a + cov * (1 - a)
        return cov
