"""``ProceduralGenerator``: the offline, deterministic default backend."""

from __future__ import annotations

import logging
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from PIL import Image

from stylisticbias.benchmark import VariationValue
from stylisticbias.generators.base import EditSpec, FaceSpec, Generator, GenResult
from stylisticbias.generators.procedural import beautify, body, fashion
from stylisticbias.generators.procedural.canvas import Canvas, Layer, over, to_uint8
from stylisticbias.generators.procedural.scene import FaceScene, apply_variation

log = logging.getLogger(__name__)


class _BodyScene:
    """The full-body layers of one identity shared by all its fashion edits."""

    def __init__(self, scene: FaceScene) -> None:
        size = scene.size
        self.c = Canvas(size, 2 * size)
        self.fig = body.figure(scene.g)
        self.skin = body.skin_layer(self.c, self.fig, scene.g.skin)
        base = Image.fromarray(scene.render())
        self.head = body.head_paste(base, scene.head_coverage(), self.c)
        self.outfits: dict[str, Layer] = {}
        self.seed = scene.g.accent

    def render(self, style: str) -> np.ndarray:
        if style not in self.outfits:
            seed = zlib.crc32(style.encode()) ^ self.seed
            self.outfits[style] = fashion.render(self.c, self.fig, style, self.fig_skin, seed)
        out = np.ones((self.c.h, self.c.w, 3), np.float32)
        for lay in (self.skin, self.outfits[style], self.head):
            over(out, lay)
        return to_uint8(out)

    @property
    def fig_skin(self) -> tuple[float, float, float]:
        return self._skin_rgb

    def set_skin(self, rgb: tuple[float, float, float]) -> None:
        self._skin_rgb = rgb


class ProceduralGenerator(Generator):
    """Vector-drawn faces: a layered scene per identity; an edit swaps the layers of one attribute.

    :param size: face images are ``size`` x ``size``; full-body (fashion) ones ``size`` x ``2*size``
    :param batch_size: requests per call the dataset builder should pass
    :param cache_faces: identities whose layers stay cached (edits of one face reuse its layers)
    :param workers: processes the dataset builder may use (read by the builder, not here)
    """

    name = "procedural"
    file_format = "png"

    def __init__(
        self, size: int = 256, batch_size: int = 64, cache_faces: int = 4, workers: int = 1
    ) -> None:
        if size < 32:
            raise ValueError(f"size must be >= 32, got {size}")
        self.size = int(size)
        self.batch_size = int(batch_size)
        self._cache_faces = max(1, int(cache_faces))
        self.workers = max(1, int(workers))
        self._scenes: OrderedDict[FaceSpec, FaceScene] = OrderedDict()
        self._bodies: OrderedDict[FaceSpec, _BodyScene] = OrderedDict()

    # ---- caches --------------------------------------------------------------------------
    def scene(self, spec: FaceSpec) -> FaceScene:
        """The (cached) layered scene of one identity."""
        sc = self._scenes.get(spec)
        if sc is None:
            sc = FaceScene(spec, self.size)
            self._scenes[spec] = sc
            while len(self._scenes) > self._cache_faces:
                old, _ = self._scenes.popitem(last=False)
                self._bodies.pop(old, None)
        else:
            self._scenes.move_to_end(spec)
        return sc

    def _body(self, spec: FaceSpec) -> _BodyScene:
        b = self._bodies.get(spec)
        if b is None:
            sc = self.scene(spec)
            b = _BodyScene(sc)
            b.set_skin(sc.g.skin)
            self._bodies[spec] = b
        return b

    # ---- rendering -----------------------------------------------------------------------
    def render_face(self, spec: FaceSpec) -> np.ndarray:
        """The base face as a uint8 RGB array."""
        return self.scene(spec).render()

    def render_edit(self, spec: FaceSpec, variation: VariationValue) -> np.ndarray:
        """One edit of ``spec`` as a uint8 RGB array (full-body for fashion styles)."""
        if variation.framing == "full_body":
            return self._body(spec).render(variation.value)
        sc = self.scene(spec)
        if variation.key == beautify.KEY:  # a filter over the whole face, not one layer
            return beautify.beautify(sc.render(), sc.g, sc.layer("head", sc.base).rgba[..., 3])
        return sc.render(apply_variation(sc.base, variation))

    def edit_mask(self, spec: FaceSpec, variation: VariationValue) -> np.ndarray:
        """Pixels a face edit may change: what the changed layers cover in base or edit."""
        if variation.framing == "full_body":
            raise ValueError("edit_mask is defined for face edits; fashion images are full-body")
        sc = self.scene(spec)
        if variation.key == beautify.KEY:
            return beautify.head_mask(sc.layer("head", sc.base).rgba[..., 3]) > 0
        return sc.changed_mask(apply_variation(sc.base, variation))

    # ---- Generator interface -------------------------------------------------------------
    def unsupported(self, variations: Sequence[VariationValue]) -> dict[str, str]:
        """Values with no drawing here (an unknown attribute or value): ``{slug: reason}``.

        Renders each distinct value once on a small probe identity (~ms per value; the verdict
        on a list of values is kept for the process: it depends on the values and this code
        only, and every composition check and sweep job asks it of the same protocol).
        """
        return dict(_unsupported(tuple({v.slug: v for v in variations}.values())))

    def generate_faces(self, specs: Sequence[FaceSpec]) -> list[GenResult]:
        """Render base faces (the prompt is not read: the demographic cell and seed are)."""
        out = []
        for spec in specs:
            try:
                out.append(GenResult(Image.fromarray(self.render_face(spec))))
            except Exception as exc:  # one bad spec must not sink the batch
                log.warning("procedural: face %s failed: %s", spec.face_id, exc)
                out.append(GenResult(None, "error", f"{type(exc).__name__}: {exc}"))
        return out

    def edit(self, base: Image.Image, edits: Sequence[EditSpec]) -> list[GenResult]:
        """Apply each edit by re-rendering its face's scene with one attribute changed.

        ``base`` must be what :meth:`generate_faces` made for the edits' face; otherwise every
        result is an error (the edit would not be of the image the dataset holds).
        """
        got = np.asarray(base.convert("RGB"))
        verified: dict[FaceSpec, str | None] = {}
        out: list[GenResult] = []
        for e in edits:
            if e.face not in verified:
                want = self.render_face(e.face)
                if got.shape != want.shape:
                    verified[e.face] = (
                        f"base image is {got.shape[1]}x{got.shape[0]}, the procedural render of "
                        f"{e.face.face_id} is {want.shape[1]}x{want.shape[0]} (size={self.size})"
                    )
                elif not np.array_equal(got, want):
                    n = int(np.any(got != want, axis=-1).sum())
                    verified[e.face] = (
                        f"base image differs from the procedural render of {e.face.face_id} "
                        f"in {n} pixels: not this generator's base face"
                    )
                else:
                    verified[e.face] = None
            problem = verified[e.face]
            if problem is not None:
                out.append(GenResult(None, "error", problem))
                continue
            try:
                out.append(GenResult(Image.fromarray(self.render_edit(e.face, e.variation))))
            except Exception as exc:
                log.warning(
                    "procedural: edit %s of %s failed: %s", e.variation.slug, e.face.face_id, exc
                )
                out.append(GenResult(None, "error", f"{type(exc).__name__}: {exc}"))
        return out


@lru_cache(maxsize=16)
def _unsupported(variations: tuple[VariationValue, ...]) -> tuple[tuple[str, str], ...]:
    """``(slug, reason)`` of each value the probe identity cannot be drawn with."""
    probe_gen = ProceduralGenerator(size=64, cache_faces=1)
    probe = FaceSpec("probe", "young adult", "female", "European", "normal", 0, "")
    out = []
    for v in variations:
        try:
            probe_gen.render_edit(probe, v)
        except (ValueError, KeyError) as exc:
            out.append((v.slug, str(exc).strip("'\"") or type(exc).__name__))
    return tuple(out)
