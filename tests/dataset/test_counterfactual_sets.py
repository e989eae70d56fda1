"""The faces stage for a protocol with counterfactual sets (REFLECT): one row per edit, the
source photo recorded per edit, 0 changed pixels outside the face mask, and the judge's units
(pairs of two edits of one source; the source photo is every record's unit)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from stylisticbias import schemas
from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import compose
from stylisticbias.dataset.build import build_faces
from stylisticbias.dataset.counterfactual_sets import edit_cells, edit_slug, read_sets
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.judge.run import task_records, task_units
from stylisticbias.spec.parse import config_from_params


def reflect_params(n: int) -> dict:
    # the job's own settings (protocol_settings.reflect) are merged over the top level's
    params = compose(["experiment=reflect-demo", f"protocol_settings.reflect.faces.n={n}"])
    params["generator"]["size"] = 64
    return params


@pytest.fixture
def built(project: Path) -> tuple[Path, pd.DataFrame, pd.DataFrame]:
    path = build_faces(config_from_params(reflect_params(3)))
    faces = schemas.read_table(path, schemas.FACES)
    sets = read_sets(path.parent)
    assert sets is not None
    return path.parent, faces, sets


def test_one_row_per_edit_with_its_source_and_demographics(built) -> None:
    out, faces, sets = built
    bench = load_benchmark("reflect")
    cells = edit_cells(bench)
    assert len(cells) == 10 and len(faces) == 30 and len(sets) == 30
    assert sets["source_id"].nunique() == 3
    merged = sets.merge(faces, on=["image_id", "face_id"])
    for src, g in merged.groupby("source_id"):
        assert sorted(g["edit"]) == sorted(edit_slug(c) for c in cells)
        # the edit's demographics are its cell's; age and body type the source's
        assert {(r.ethnicity, r.gender) for r in g.itertuples()} == {
            (c["ethnicity"], c["gender"]) for c in cells
        }
        assert g["age"].nunique() == 1 and g["body_type"].nunique() == 1
        assert (out / "sources" / f"{src}.png").is_file()
    assert (sets["changed_outside"] == 0).all() and (sets["changed_inside"] > 0).all()


def test_pixels_outside_the_mask_identical_across_a_source(built) -> None:
    out, faces, sets = built
    for src, g in sets.merge(faces, on=["image_id", "face_id"]).groupby("source_id"):
        mask = np.asarray(Image.open(out / "masks" / f"{src}.png")) > 0
        imgs = [np.asarray(Image.open(out / p).convert("RGB")) for p in g["path"]]
        ref = np.asarray(Image.open(out / "sources" / f"{src}.png").convert("RGB"))
        assert 0 < mask.mean() < 0.4
        for img in imgs:
            assert int(np.any(img[~mask] != ref[~mask], axis=-1).sum()) == 0
            assert np.any(img[mask] != imgs[0][mask]) or img is imgs[0]


def test_units_pair_edits_of_one_source(built) -> None:
    _, faces, sets = built
    singles, pairs = task_units(faces, sets)
    source = dict(zip(sets["image_id"], sets["source_id"]))
    assert len(singles) == 30 and {u for *_, u in singles} == set(sets["source_id"])
    assert all(source[iid] == unit for _, iid, _, unit in singles)
    assert len(pairs) == 3 * 45  # every pair of ten groups, per source
    for unit, (a, b), (ga, gb) in pairs:
        assert source[a] == source[b] == unit and ga != gb
    stray = r"lists 10 image.s. that counterfactuals\.parquet"
    with pytest.raises(StylisticBiasError, match=stray):
        task_units(faces, sets[sets["source_id"] != unit])
    rec = task_records(load_benchmark("reflect"), faces, "sim", 0, sets)
    assert set(rec["unit"]) == set(sets["source_id"])  # the sampling unit of every task
    two_afc = rec[rec["task_id"] == 1]
    assert len(two_afc) == 2 * 3 * 45 and set(two_afc["variant"]) == {0, 1}


def test_other_generators_cannot_draw_sets(project: Path) -> None:
    params = reflect_params(2)
    params["generator"] = {"_target_": "fake_generator.FakeGenerator", "workers": 1}
    with pytest.raises(StylisticBiasError, match="drawn by generator=procedural or imported"):
        build_faces(config_from_params(params))


@pytest.mark.parametrize(
    ("overrides", "phrase"),
    [
        (
            ["experiment=reflect-demo", "generator=gemini"],
            "generator GeminiGenerator cannot draw them; valid: generator=procedural",
        ),
        (
            ["experiment=reflect-demo", "generator=import"],
            "import them with generator.layout=counterfactual (a folder of edits per source "
            "photo), not release",
        ),
        (
            ["generator=import", "generator.layout=counterfactual"],
            "stylisticbias.yaml has no counterfactual.axes",
        ),
    ],
)
def test_compose_time_generator_checks(overrides: list[str], phrase: str) -> None:
    from stylisticbias.validate import validate_params

    with pytest.raises(StylisticBiasError, match=re.escape(phrase)):
        validate_params(compose(overrides))
    validate_params(
        compose(["experiment=reflect-demo", "generator=import", "generator.layout=counterfactual"])
    )
