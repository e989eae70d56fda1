"""The procedural generator's ``beautify`` edit (a beauty-filter stand-in for tests/demos)."""

from __future__ import annotations

import numpy as np
import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.generators.base import FaceSpec
from stylisticbias.generators.procedural.generator import ProceduralGenerator

SPECS = [
    FaceSpec("p1", "old", "female", "Black", "not labelled", 7, ""),
    FaceSpec("p2", "young", "male", "Indian", "not labelled", 3, ""),
]


@pytest.fixture(scope="module")
def beautify():
    return load_benchmark("beauty-and-the-bias").variations[0]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.face_id)
def test_beautify_changes_only_the_face_and_is_deterministic(spec, beautify) -> None:
    gen = ProceduralGenerator(size=128)
    base = gen.render_face(spec)
    edit = gen.render_edit(spec, beautify)
    assert np.array_equal(edit, ProceduralGenerator(size=128).render_edit(spec, beautify))
    changed = np.any(edit != base, axis=-1)
    mask = gen.edit_mask(spec, beautify)
    assert changed.sum() > 0.05 * changed.size  # a visible edit
    assert not (changed & ~mask).any()  # nothing outside the head changes
    assert gen.unsupported([beautify]) == {}


def test_beautify_smooths_brightens_and_symmetrises(beautify) -> None:
    spec = SPECS[0]
    gen = ProceduralGenerator(size=128)
    base = gen.render_face(spec).astype(float)
    edit = gen.render_edit(spec, beautify).astype(float)
    m = gen.edit_mask(spec, beautify)
    # brighter skin inside the face
    assert edit[m].mean() > base[m].mean()

    # smoother: less high-frequency energy inside the face
    def roughness(x: np.ndarray) -> float:
        return float(np.abs(np.diff(x, axis=1))[m[:, 1:]].mean())

    assert roughness(edit) < roughness(base)

    # more symmetric about the face's axis
    def asym(x: np.ndarray) -> float:
        return float(np.abs(x - x[:, ::-1])[m & m[:, ::-1]].mean())

    assert asym(edit) < asym(base)


def test_protocol_labels_draw_with_their_palettes() -> None:
    gen = ProceduralGenerator(size=64)
    old = gen.render_face(FaceSpec("x", "old", "male", "White", "not labelled", 1, ""))
    young = gen.render_face(FaceSpec("x", "young", "male", "White", "not labelled", 1, ""))
    assert not np.array_equal(old, young)  # "old" is drawn old, not as the default age
    dark = gen.render_face(FaceSpec("y", "young", "male", "Black", "not labelled", 1, ""))
    light = gen.render_face(FaceSpec("y", "young", "male", "White", "not labelled", 1, ""))
    assert dark.mean() < light.mean()
