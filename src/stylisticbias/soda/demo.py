"""The SODA demo's offline stand-in: objects drawn from planted attribute distributions.

:class:`StandIn` draws, for each (object, condition, index), one value of every planted
attribute (``conf/soda/planted.yaml``) from the condition's distribution -- the base one, a
group's shift, or a mitigated shift moved back toward base -- with a generator seeded by
(seed, object, condition, index), and renders it as a small PNG (background colour, a shape in
the product colour, a text or logo mark), so an annotator has an image to label. The truth of
every image is kept for the simulated annotator and the tests.

:func:`null_calibration`: the size of the BDS permutation test, over null replicates where base
and group images come from one distribution.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw
from scipy import stats

from stylisticbias.config import load_yaml_file
from stylisticbias.errors import StylisticBiasError
from stylisticbias.soda.metrics import DEFAULT_JS, JSSettings, permutation_seed, permutation_test
from stylisticbias.soda.protocol import BASE, Condition

#: colours the stand-in draws (any other value gets a colour from its hash)
PALETTE = {
    "silver": (192, 192, 200),
    "black": (25, 25, 25),
    "red": (200, 30, 30),
    "rose_gold": (226, 170, 160),
    "blue": (40, 70, 200),
    "white": (250, 250, 250),
    "grey": (150, 150, 150),
    "beige": (235, 220, 190),
}


@dataclass(frozen=True)
class Planted:
    """The planted attribute distributions (``conf/soda/planted.yaml``)."""

    attributes: Mapping[str, tuple[str, ...]]
    base: Mapping[str, np.ndarray]
    shifts: Mapping[str, Mapping[str, np.ndarray]]
    mitigation: Mapping[str, float]

    def distribution(self, cond: Condition, attribute: str) -> np.ndarray:
        """The distribution of ``attribute`` under ``cond``."""
        base = self.base[attribute]
        shifted = self.shifts.get(cond.group, {}).get(attribute)
        if cond.dimension == BASE or shifted is None:
            return base
        if cond.variant != "original":
            back = float(self.mitigation[cond.variant])
            return (1 - back) * shifted + back * base
        return shifted

    def is_shifted(self, group: str) -> bool:
        """Whether the group's distributions differ from base (a planted difference)."""
        return bool(self.shifts.get(group))


def load_planted(path: Path) -> Planted:
    """Read and check ``conf/soda/planted.yaml`` (one error line naming the bad key)."""
    cfg: Any = load_yaml_file(path)  # one line on bad bytes or bad YAML
    where = str(path)
    attrs = {str(a): tuple(str(v) for v in vals) for a, vals in cfg["attributes"].items()}

    def dist(key: str, attr: str, p: Sequence[float]) -> np.ndarray:
        arr = np.asarray(p, dtype=np.float64)
        if attr not in attrs or len(arr) != len(attrs[attr]) or abs(arr.sum() - 1) > 1e-9:
            raise StylisticBiasError(
                f"{where}: {key}.{attr} must give one probability per value of "
                f"attributes.{attr} summing to 1; valid attributes: {', '.join(attrs)}"
            )
        return arr

    base = {a: dist("base", a, cfg["base"][a]) for a in attrs}
    shifts = {
        str(g): {a: dist(f"shifts.{g}", a, p) for a, p in d.items()}
        for g, d in (cfg.get("shifts") or {}).items()
    }
    return Planted(attrs, base, shifts, {str(k): float(v) for k, v in cfg["mitigation"].items()})


def _seed(seed: int, *parts: str) -> int:
    return permutation_seed(seed, "stand-in", *parts)


def _colour(name: str) -> tuple[int, int, int]:
    if name in PALETTE:
        return PALETTE[name]
    h = hashlib.sha256(name.encode()).digest()
    return (h[0], h[1], h[2])


class StandIn:
    """Draws and renders the stand-in images of one planted configuration."""

    def __init__(self, planted: Planted, seed: int, size: int = 64) -> None:
        self.planted = planted
        self.seed = int(seed)
        self.size = int(size)

    def draw(self, obj: str, cond: Condition, index: int) -> dict[str, str]:
        """The attribute values of image ``index`` of ``obj`` under ``cond``."""
        rng = np.random.default_rng(_seed(self.seed, obj, cond.id, str(index)))
        return {
            a: str(vals[int(rng.choice(len(vals), p=self.planted.distribution(cond, a)))])
            for a, vals in self.planted.attributes.items()
        }

    def render(self, truth: Mapping[str, str]) -> Image.Image:
        """A small picture of the drawn values."""
        s = self.size
        img = Image.new("RGB", (s, s), _colour(truth.get("background_color", "white")))
        d = ImageDraw.Draw(img)
        fill = _colour(truth.get("product_color", "silver"))
        shape = truth.get("shape", "round")
        box = (s // 4, s // 4, 3 * s // 4, 3 * s // 4)
        if shape == "round":
            d.ellipse(box, fill=fill)
        elif shape == "tall":
            d.rectangle((3 * s // 8, s // 8, 5 * s // 8, 7 * s // 8), fill=fill)
        else:
            d.rectangle(box, fill=fill)
        mark = truth.get("text_presence", "no_text")
        if mark == "logo_symbol":
            d.ellipse((s // 2 - 3, s // 2 - 3, s // 2 + 3, s // 2 + 3), fill=(255, 215, 0))
        elif mark == "brand_text":
            d.text((s // 4, s // 2 - 4), "ABC", fill=(255, 255, 255))
        return img


@dataclass(frozen=True)
class NullCalibration:
    """The permutation test's size over null replicates, with its binomial interval."""

    replicates: int
    n_per_condition: int
    n_perm: int
    alpha: float
    rejections: int
    size: float
    ci_low: float
    ci_high: float
    within: bool


def null_calibration(
    planted: Planted,
    replicates: int = 200,
    n_per_condition: int = 20,
    n_perm: int = 10_000,
    alpha: float = 0.01,
    seed: int = 0,
    s: JSSettings = DEFAULT_JS,
    confidence: float = 0.95,
) -> NullCalibration:
    """Share of null replicates (base and group drawn from ``planted.base``) with p < alpha,
    and whether ``alpha`` lies in its Clopper-Pearson interval."""
    rejections = 0
    base_cond = Condition(BASE, BASE)
    for r in range(replicates):
        stand = StandIn(planted, permutation_seed(seed, "null", str(r)))
        a = [stand.draw("null", base_cond, i) for i in range(n_per_condition)]
        b = [stand.draw("null", base_cond, n_per_condition + i) for i in range(n_per_condition)]
        la = {k: [x[k] for x in a] for k in planted.attributes}
        lb = {k: [x[k] for x in b] for k in planted.attributes}
        _, p = permutation_test(la, lb, n_perm, permutation_seed(seed, "perm", str(r)), s)
        rejections += int(p < alpha)
    ci = stats.binomtest(rejections, replicates, alpha).proportion_ci(confidence)
    return NullCalibration(
        replicates,
        n_per_condition,
        n_perm,
        alpha,
        rejections,
        rejections / replicates,
        float(ci.low),
        float(ci.high),
        bool(ci.low <= alpha <= ci.high),
    )
