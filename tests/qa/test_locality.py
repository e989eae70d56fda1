"""Edit locality: the measure by hand, exact procedural masks, planted leaks, the stage's table."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from stylisticbias import schemas
from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import compose, load_params, project_root
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.generators.base import FaceSpec
from stylisticbias.generators.procedural import ProceduralGenerator
from stylisticbias.qa.locality import (
    GeneratorMasks,
    LocalityThresholds,
    NoMasks,
    edit_locality,
    mask_source_for,
    pixel_change,
)
from stylisticbias.qa.stage import build_locality
from stylisticbias.qa.tables import LOCALITY
from stylisticbias.spec.parse import config_from_params

SIZE = 64
BENCH = benchmark_from_params(load_params())
FACE = FaceSpec("f1", "young adult", "female", "Asian", "thin", 202, "p")
FACE_ROW = {
    "face_id": "f1",
    "age": "young adult",
    "gender": "female",
    "ethnicity": "Asian",
    "body_type": "thin",
    "seed": 202,
    "prompt": "p",
}
LIMITS = LocalityThresholds(pixel_tol=0.02, max_outside=0.01, max_changed_outside=0.02)
FACE_VALUES = [v for v in BENCH.variations if v.framing == "face" and v.applies_to("female")]


def test_measures_by_hand() -> None:
    base = np.zeros((4, 5, 3), np.uint8)
    edit = base.copy()
    mask = np.zeros((4, 5), bool)
    mask[:2] = True  # 10 inside, 10 outside
    edit[0, 0] = 255  # inside: d = 1
    edit[1, 1, 0] = 51  # inside: d = 51 / 255 / 3 = 1/15
    edit[3, 4, :] = 3  # outside: d = 3/255 (below the 0.02 pixel tolerance)
    edit[2, 0, 1] = 255  # outside: d = 1/3
    loc = edit_locality(base, edit, mask, pixel_tol=0.02)
    assert loc.mask_share == pytest.approx(0.5)
    assert loc.diff_inside == pytest.approx((1 + 1 / 15) / 10)
    assert loc.diff_outside == pytest.approx((3 / 255 + 1 / 3) / 10)
    assert loc.diff_all == pytest.approx((1 + 1 / 15 + 3 / 255 + 1 / 3) / 20)
    assert loc.changed_outside == pytest.approx(1 / 10)  # only the 1/3 pixel is "changed"
    assert loc.leak == pytest.approx(1 / 3)  # 3 changed pixels, one of them outside
    assert loc.gap == pytest.approx(loc.diff_inside - loc.diff_outside)
    assert loc.ratio == pytest.approx(loc.diff_inside / loc.diff_outside)
    assert loc.passes(LIMITS) is False
    same = edit_locality(base, base, mask, 0.02)
    assert (same.diff_inside, same.diff_outside, same.leak) == (0.0, 0.0, 0.0)
    assert np.isnan(same.ratio) and same.passes(LIMITS) is True
    nomask = edit_locality(base, edit, None, 0.02)
    assert np.isnan(nomask.diff_outside) and nomask.passes(LIMITS) is None
    assert nomask.diff_all == pytest.approx(loc.diff_all)
    with pytest.raises(ValueError, match="shape"):
        pixel_change(base, np.zeros((4, 4, 3), np.uint8))


@pytest.fixture(scope="module")
def gen() -> ProceduralGenerator:
    return ProceduralGenerator(size=SIZE)


@pytest.mark.parametrize("v", FACE_VALUES[::4], ids=lambda v: v.slug)
def test_procedural_edits_are_local_under_their_masks(gen: ProceduralGenerator, v) -> None:
    base, edit = gen.render_face(FACE), gen.render_edit(FACE, v)
    masks = mask_source_for(gen)
    assert isinstance(masks, GeneratorMasks)
    mask = masks.mask(FACE_ROW, v)
    loc = edit_locality(base, edit, mask, LIMITS.pixel_tol)
    assert loc.diff_outside == 0.0 and loc.changed_outside == 0.0 and loc.leak == 0.0
    assert loc.diff_inside > 0.0 and loc.passes(LIMITS) is True
    assert 0.0 < loc.mask_share < 0.6


def _plant_leak(base: np.ndarray, edit: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """``edit`` with +30 on the red channel of ``k`` outside pixels (d = 30/765 each)."""
    out = edit.copy()
    ys, xs = np.nonzero(~mask & (base[..., 0] < 200) & (edit[..., 0] == base[..., 0]))
    out[ys[:k], xs[:k], 0] += 30
    return out


def test_a_planted_leak_is_measured_exactly(gen: ProceduralGenerator) -> None:
    v = BENCH.variation("Eyewear", "Thin metal")
    base, edit = gen.render_face(FACE), gen.render_edit(FACE, v)
    mask = GeneratorMasks(gen).mask(FACE_ROW, v)
    n_out = int((~mask).sum())
    for k, passes in ((3, True), (200, False)):
        loc = edit_locality(base, _plant_leak(base, edit, mask, k), mask, LIMITS.pixel_tol)
        assert loc.diff_outside == pytest.approx(k * 30 / 765 / n_out)
        assert loc.changed_outside == pytest.approx(k / n_out)
        assert loc.passes(LIMITS) is passes


def test_no_masks_without_edit_mask() -> None:
    assert isinstance(mask_source_for(object()), NoMasks)
    with pytest.raises(TypeError):
        GeneratorMasks(object())


def test_stage_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(project_root() / "conf", tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    params = compose(["faces.n=2", f"generator.size={SIZE}"])
    build_faces(config_from_params(params))
    var = schemas.read_table(build_variations(config_from_params(params)), schemas.VARIATIONS)
    # plant a leak into one face edit (a new file: images are hard links into the render cache)
    gen = ProceduralGenerator(size=SIZE)
    out = {k: tmp_path / v for k, v in params["paths"].items() if v}
    faces = pd.read_parquet(out["faces"] / "faces.parquet")
    row = var[var["framing"] == "face"].iloc[0]
    face = faces.set_index("face_id").loc[row["face_id"]]
    face_row = {"face_id": row["face_id"], **face.to_dict()}
    v = BENCH.variation(row["attribute"], row["value"])
    mask = GeneratorMasks(gen).mask(face_row, v)
    img_path = out["variations"] / row["path"]
    base = np.asarray(Image.open(out["faces"] / face["path"]).convert("RGB"))
    edit = np.asarray(Image.open(img_path).convert("RGB"))
    leaked = _plant_leak(base, edit, mask, 300)
    img_path.unlink()
    Image.fromarray(leaked).save(img_path)

    table = schemas.read_table(build_locality(config_from_params(params)), LOCALITY)
    assert len(table) == len(var) and set(table["image_id"]) == set(var["image_id"])
    face_rows = table[table["framing"] == "face"]
    assert (face_rows["mask_source"] == "layers").all()
    bad = face_rows["image_id"] == row["image_id"]
    assert face_rows.loc[bad, "locality_pass"].tolist() == [False]
    n_out = int((~mask).sum())
    assert face_rows.loc[bad, "diff_outside"].iloc[0] == pytest.approx(300 * 30 / 765 / n_out)
    good = face_rows[~bad]
    assert good["locality_pass"].all() and (good["diff_outside"] == 0).all()
    body = table[table["framing"] == "full_body"]
    assert len(body) and (body["mask_source"] == "not_comparable").all()
    assert body["locality_pass"].isna().all() and body["reason"].str.contains("framing|x").all()
    # deterministic: a rerun writes the same bytes
    first = (out["qa"] / "locality.parquet").read_bytes()
    build_locality(config_from_params(params))
    assert (out["qa"] / "locality.parquet").read_bytes() == first
