"""The procedural generator: determinism, every value visible, local edits, full-body face."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import load_params
from stylisticbias.generators.base import EditSpec, FaceSpec, Generator
from stylisticbias.generators.procedural import ProceduralGenerator
from stylisticbias.generators.procedural.body import head_box

SIZE = 128
BENCH = benchmark_from_params(load_params())
VARIATIONS = list(BENCH.variations)
MALE = FaceSpec("m1", "middle-aged adult", "male", "Middle Eastern", "obese", 101, "p")
FEMALE = FaceSpec("f1", "young adult", "female", "Asian", "thin", 202, "p")


def _face_for(v) -> FaceSpec:
    return MALE if v.applies_to("male") else FEMALE


@pytest.fixture(scope="module")
def gen() -> ProceduralGenerator:
    return ProceduralGenerator(size=SIZE)


def test_is_a_generator() -> None:
    g = ProceduralGenerator()
    assert isinstance(g, Generator)
    assert (g.name, g.file_format, g.size, g.batch_size) == ("procedural", "png", 256, 64)


def test_there_are_55_values() -> None:
    assert len(VARIATIONS) == 55


def test_deterministic_across_instances(gen: ProceduralGenerator) -> None:
    a = gen.generate_faces([MALE, FEMALE])
    b = ProceduralGenerator(size=SIZE).generate_faces([MALE, FEMALE])
    for x, y in zip(a, b):
        assert x.status == "ok" and x.image is not None and y.image is not None
        assert x.image.tobytes() == y.image.tobytes()
        assert x.image.size == (SIZE, SIZE)
    v = BENCH.variation("Hair style", "Afro")
    e1 = gen.render_edit(MALE, v)
    e2 = ProceduralGenerator(size=SIZE).render_edit(MALE, v)
    assert np.array_equal(e1, e2)


def test_identities_and_cells_differ(gen: ProceduralGenerator) -> None:
    a = gen.render_face(MALE)
    other_seed = FaceSpec("m2", MALE.age, MALE.gender, MALE.ethnicity, MALE.body_type, 7, "p")
    other_cell = FaceSpec("m1", "elderly", "female", "African", "thin", 101, "p")
    assert np.abs(a.astype(int) - gen.render_face(other_seed)).mean() > 1
    assert np.abs(a.astype(int) - gen.render_face(other_cell)).mean() > 3


def test_base_face_looks_like_a_portrait(gen: ProceduralGenerator) -> None:
    img = gen.render_face(FEMALE).astype(int)
    assert (img[:4, :4] == 255).all() and (img[:4, -4:] == 255).all()  # white backdrop
    centre = img[SIZE // 2 - 5 : SIZE // 2 + 5, SIZE // 2 - 5 : SIZE // 2 + 5]
    assert centre.mean() < 240  # a face, not background
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 500  # shaded, not flat


@pytest.mark.parametrize("v", VARIATIONS, ids=lambda v: v.slug)
def test_every_value_renders_and_differs_from_base(gen: ProceduralGenerator, v) -> None:
    face = _face_for(v)
    base = gen.render_face(face)
    out = gen.render_edit(face, v)
    if v.framing == "full_body":
        assert out.shape == (2 * SIZE, SIZE, 3)
        return
    assert out.shape == base.shape
    changed = np.any(out != base, axis=-1)
    assert changed.sum() >= 5, f"{v.slug}: only {changed.sum()} pixels changed"
    diff = np.abs(out.astype(int) - base.astype(int)).sum(-1)
    assert diff[changed].mean() > 12, f"{v.slug}: change too faint"


@pytest.mark.parametrize("v", [v for v in VARIATIONS if v.framing == "face"], ids=lambda v: v.slug)
def test_edit_changes_only_its_layers(gen: ProceduralGenerator, v) -> None:
    face = _face_for(v)
    base = gen.render_face(face)
    out = gen.render_edit(face, v)
    mask = gen.edit_mask(face, v)
    assert np.array_equal(out[~mask], base[~mask]), f"{v.slug} changed pixels outside its layers"
    assert mask.mean() < 0.6
    # landmarks that belong to other attributes stay identical
    sc = gen.scene(face)
    g = sc.g
    px = lambda x, y: (round(y * SIZE), round(x * SIZE))  # noqa: E731
    corners = [(2, 2), (2, SIZE - 3)]
    pupils = [px(g.cx - g.eye_dx, g.eye_y), px(g.cx + g.eye_dx, g.eye_y)]
    mouth = [px(g.cx, g.mouth_y + g.lip_lo * 0.4)]
    keep = list(corners)
    if v.attribute not in ("Eyewear", "Makeup"):
        keep += pupils
    if v.attribute not in ("Lip makeup", "Facial hair", "Piercings", "Accessories"):
        keep += mouth
    for y, x in keep:
        assert (out[y, x] == base[y, x]).all(), f"{v.slug} touched landmark {(y, x)}"


def test_hair_edits_keep_the_face_and_ears(gen: ProceduralGenerator) -> None:
    face = FEMALE
    g = gen.scene(face).g
    ear = (round(((g.ear_y0 + g.ear_y1) / 2) * SIZE), round((g.cx + g.fw + g.ear_w * 0.4) * SIZE))
    base = gen.render_face(face)
    for v in VARIATIONS:
        if v.attribute in ("Hair color", "Hair length", "Hair style") and v.value != "Afro":
            out = gen.render_edit(face, v)
            assert (out[ear] == base[ear]).all(), f"{v.slug} covered the ear"


@pytest.mark.parametrize(
    "v", [v for v in VARIATIONS if v.framing == "full_body"], ids=lambda v: v.slug
)
def test_full_body_keeps_the_face(gen: ProceduralGenerator, v) -> None:
    face = _face_for(v)
    base = Image.fromarray(gen.render_face(face))
    x0, y0, n = head_box(SIZE)
    scaled = np.asarray(base.resize((n, n), Image.Resampling.LANCZOS))
    cov = gen.scene(face).head_coverage()
    cov_small = np.asarray(
        Image.fromarray((cov * 255 + 0.5).astype(np.uint8)).resize(
            (n, n), Image.Resampling.BILINEAR
        )
    )
    inside = cov_small == 255
    assert inside.sum() > 0.12 * n * n  # the head is a big part of the pasted square
    out = gen.render_edit(face, v)
    region = out[y0 : y0 + n, x0 : x0 + n]
    assert np.array_equal(region[inside], scaled[inside])
    # a dressed figure below the head: the lower half is mostly not background
    lower = out[SIZE:, SIZE // 4 : 3 * SIZE // 4]
    assert (lower.min(-1) < 240).mean() > 0.4


def test_fashion_styles_are_distinct(gen: ProceduralGenerator) -> None:
    for face in (MALE, FEMALE):
        imgs = {
            v.value: gen.render_edit(face, v).astype(int)
            for v in VARIATIONS
            if v.framing == "full_body"
        }
        names = list(imgs)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                d = np.abs(imgs[a] - imgs[b]).sum(-1)
                assert (d > 30).mean() > 0.02, f"{a} vs {b} look alike"


def test_values_of_one_attribute_differ_from_each_other(gen: ProceduralGenerator) -> None:
    for attr in BENCH.attributes:
        vals = [v for v in VARIATIONS if v.attribute == attr and v.framing == "face"]
        face = _face_for(vals[0]) if vals else MALE
        imgs = [gen.render_edit(face, v) for v in vals if v.applies_to(face.gender)]
        for i in range(len(imgs)):
            for j in range(i + 1, len(imgs)):
                assert np.any(imgs[i] != imgs[j]), f"{attr}: two values render identically"


def test_edit_interface_verifies_the_base(gen: ProceduralGenerator) -> None:
    base = gen.generate_faces([MALE])[0].image
    assert base is not None
    vs = [BENCH.variation("Eyewear", "Sunglasses"), BENCH.variation("Fashion style", "Casual")]
    edits = [EditSpec(MALE, v, "p", 1) for v in vs]
    res = gen.edit(base, edits)
    assert [r.status for r in res] == ["ok", "ok"]
    assert res[0].image.size == (SIZE, SIZE) and res[1].image.size == (SIZE, 2 * SIZE)
    # a PNG round trip is still the same base
    import io

    buf = io.BytesIO()
    base.save(buf, format="PNG")
    again = gen.edit(Image.open(buf), edits[:1])
    assert again[0].status == "ok"
    # a different image is refused with a reason
    wrong = gen.edit(Image.fromarray(gen.render_face(FEMALE)), edits)
    assert all(
        r.status == "error" and r.image is None and "differs" in (r.reason or "") for r in wrong
    )
    small = gen.edit(base.resize((64, 64)), edits[:1])
    assert small[0].status == "error" and "64x64" in (small[0].reason or "")


def test_unknown_attribute_is_an_error_result(gen: ProceduralGenerator) -> None:
    from dataclasses import replace

    v = replace(BENCH.variation("Tattoos", "Facial tattoo"), attribute="Nonexistent")
    base = gen.generate_faces([MALE])[0].image
    res = gen.edit(base, [EditSpec(MALE, v, "p", 1)])
    assert res[0].status == "error" and "Nonexistent" in (res[0].reason or "")


def test_hydra_config_builds_it() -> None:
    from hydra.utils import instantiate

    cfg = load_params().get("generator") or {
        "_target_": "stylisticbias.generators.procedural.ProceduralGenerator",
        "size": 256,
    }
    g = instantiate(cfg)
    assert isinstance(g, ProceduralGenerator)
