"""generator=import, layout pairs: original/<id>, beautified/<id> and labels.csv -> manifests.

A paired-variation protocol (Beauty and the Bias) takes its images from the user: the original
becomes the base face and the beautified image its one variation. A person with one image of
the two, an image in one folder only and a label outside the protocol are one line each, and
nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from import_fixtures import import_params
from PIL import Image

from stylisticbias import schemas
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.parse import config_from_params

SOURCE = "data/import/pairs"
LABELS = (
    "id,gender,age,race\np01,female,young,Black\np02,male,old,White\np03,male,middle-aged,Asian\n"
)


def _params(*overrides: str) -> dict:
    return import_params(
        "protocol=beauty-and-the-bias",
        "generator.layout=pairs",
        f"generator.source={SOURCE}",
        *overrides,
    )


def _image(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 255, size=(32, 32, 3), dtype=np.uint8)).save(path)


@pytest.fixture
def pairs(project: Path) -> Path:
    root = project / SOURCE
    for i, pid in enumerate(("p01", "p02", "p03")):
        _image(root / "original" / f"{pid}.png", i)
        _image(root / "beautified" / f"{pid}.jpg", 10 + i)
    (root / "labels.csv").write_text(LABELS, encoding="utf-8")
    return root


def test_pairs_become_faces_and_their_one_variation(project: Path, pairs: Path) -> None:
    params = _params()
    faces = schemas.read_table(build_faces(config_from_params(params)), schemas.FACES)
    var = schemas.read_table(build_variations(config_from_params(params)), schemas.VARIATIONS)
    assert list(faces["face_id"]) == ["p01", "p02", "p03"]
    assert list(faces["ethnicity"]) == ["Black", "White", "Asian"]  # labels.csv's race column
    assert list(faces["age"]) == ["young", "old", "middle-aged"]
    assert set(faces["body_type"]) == {"not labelled"}  # a one-value axis may be left out
    assert list(var["face_id"]) == ["p01", "p02", "p03"]
    assert set(zip(var["attribute"], var["value"])) == {("Beauty filter", "Beautified")}
    assert var["evaluated"].all() and (var["status"] == "ok").all()
    # the bytes are the user's images
    p01 = project / params["paths"]["variations"] / var.loc[var["face_id"] == "p01", "path"].iloc[0]
    assert p01.read_bytes() == (pairs / "beautified" / "p01.jpg").read_bytes()


CASES = {  # name -> (phrase of the one line, what it names)
    "missing_half": ("no beautified/p02.* image; each person needs", "labels.csv line 3 (p02"),
    "one_folder_only": ("image in original/ only (no p09.* in the other folder", "p09.png"),
    "no_labels": ("no labels.csv row for id 'p09'", "p09.png"),
    "unknown_label": ("has ethnicity 'Martian', outside the demographic grid", "line 4 (p03)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bad_pair_is_one_line_and_nothing_is_written(
    project: Path, pairs: Path, case: str
) -> None:
    if case == "missing_half":
        (pairs / "beautified" / "p02.jpg").unlink()
    elif case == "one_folder_only":
        _image(pairs / "original" / "p09.png", 9)
    elif case == "no_labels":
        _image(pairs / "original" / "p09.png", 9)
        _image(pairs / "beautified" / "p09.png", 19)
    elif case == "unknown_label":
        (pairs / "labels.csv").write_text(LABELS.replace("Asian", "Martian"), encoding="utf-8")
    phrase, names = CASES[case]
    params = _params()
    with pytest.raises(StylisticBiasError) as exc:
        build_faces(config_from_params(params))
    msg = str(exc.value)
    assert "\n" not in msg and phrase in msg and names in msg, msg
    assert "nothing was written" in msg
    assert not (project / params["paths"]["faces"]).exists()


def test_missing_labels_column_names_the_valid_ones(project: Path, pairs: Path) -> None:
    (pairs / "labels.csv").write_text("id,gender,age\np01,female,young\n", encoding="utf-8")
    with pytest.raises(StylisticBiasError, match=r"labels.csv: missing column ethnicity or race"):
        build_faces(config_from_params(_params()))


def test_skip_lists_the_bad_pair_and_imports_the_rest(project: Path, pairs: Path) -> None:
    (pairs / "beautified" / "p02.jpg").unlink()
    params = _params("generator.on_error=skip")
    faces = schemas.read_table(build_faces(config_from_params(params)), schemas.FACES)
    var = schemas.read_table(build_variations(config_from_params(params)), schemas.VARIATIONS)
    assert list(faces["face_id"]) == ["p01", "p02", "p03"]  # p02's original is fine
    assert list(var["face_id"]) == ["p01", "p03"]
    import pandas as pd

    skipped = pd.read_parquet(project / params["paths"]["variations"] / "skipped.parquet")
    assert list(skipped["check"]) == ["missing_half"]
