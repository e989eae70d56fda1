"""Face-only counterfactual sets of the procedural generator: outside the face mask every edit
of a source is pixel-identical (0 changed pixels); inside it the edits differ."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from stylisticbias.generators.base import FaceSpec
from stylisticbias.generators.procedural.counterfactual import (
    counterfactual_set,
    edit_geometry,
)
from stylisticbias.generators.procedural.geometry import face_geometry
from stylisticbias.generators.procedural.scene import FaceScene

RACES = ("White", "Black", "Asian", "Latino", "Middle Eastern")
CELLS = [{"ethnicity": e, "gender": g} for e in RACES for g in ("female", "male")]
SIZE = 96


def source(seed: int, gender: str = "male", ethnicity: str = "Asian") -> FaceSpec:
    return FaceSpec(f"src{seed}", "adult", gender, ethnicity, "unspecified", seed, "")


SOURCES = (source(11, "male", "Asian"), source(12, "female", "Black"))


@pytest.fixture(scope="module")
def sets():
    return [counterfactual_set(src, CELLS, SIZE) for src in SOURCES]


def test_outside_the_face_mask_every_edit_is_identical(sets):
    for cs in sets:
        out = ~cs.mask
        assert out.sum() > 0.6 * out.size  # the face is a minority of the picture
        for img in cs.images:
            assert img.shape == cs.source.shape
            assert int(np.any(img[out] != cs.source[out], axis=-1).sum()) == 0
        for a, b in itertools.combinations(cs.images, 2):
            assert np.array_equal(a[out], b[out])


def test_inside_the_face_mask_edits_differ(sets):
    for cs in sets:
        m = cs.mask
        for a, b in itertools.combinations(range(len(CELLS)), 2):
            changed = np.any(cs.images[a][m] != cs.images[b][m], axis=-1).mean()
            assert changed > 0.2, (CELLS[a], CELLS[b], changed)
        # a race edit moves the skin tone: White vs Black edits differ in mean brightness
        white = cs.images[CELLS.index({"ethnicity": "White", "gender": "female"})]
        black = cs.images[CELLS.index({"ethnicity": "Black", "gender": "female"})]
        assert white[m].mean() > black[m].mean() + 30


def test_mask_is_the_face_not_the_scene(sets):
    """The mask holds the head and neck: not the corners (background), not the hair where it
    is opaque above the forehead, not the middle of the shirt."""
    for src, cs in zip(SOURCES, sets):
        m = cs.mask
        assert not m[:5, :5].any() and not m[:5, -5:].any()
        assert not m[-3:, SIZE // 2 - 5 : SIZE // 2 + 5].any()  # the shirt below the collar
        scene = FaceScene(src, SIZE)
        hair = scene.layer("hair_front", scene.base).alpha
        head = scene.layer("head", scene.base).alpha
        opaque_hair = (hair >= 1.0) & (head == 0)
        assert opaque_hair.sum() > 20 and not m[opaque_hair].any()


def test_source_layers_kept_and_face_from_target():
    src = source(5, "female", "White")
    g = edit_geometry(src, {"ethnicity": "Black", "gender": "male"})
    s = face_geometry(src)
    for kept in (
        "cx",
        "top",
        "chin",
        "fw",
        "jaw_w",
        "hairline",
        "hair",
        "hair_len",
        "top_rgb",
        "neck_w",
        "shoulder_w",
        "eye_y",
        "nose_y",
    ):
        assert getattr(g, kept) == getattr(s, kept), kept
    assert g.male and not s.male and g.skin != s.skin and g.shadow > 0
    # the source's own cell is edited too (traits redrawn from the edit stream)
    own = edit_geometry(src, {"ethnicity": "White", "gender": "female"})
    assert own.skin != s.skin
    with pytest.raises(ValueError, match="change ethnicity, gender only; got age"):
        edit_geometry(src, {"age": "elderly"})


def test_deterministic_and_source_equals_scene_render():
    a = counterfactual_set(source(3), CELLS[:3], SIZE)
    b = counterfactual_set(source(3), CELLS[:3], SIZE)
    assert all(np.array_equal(x, y) for x, y in zip(a.images, b.images))
    assert np.array_equal(a.mask, b.mask)
    assert np.array_equal(a.source, FaceScene(source(3), SIZE).render())
