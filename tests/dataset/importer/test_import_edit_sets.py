"""generator=import, layout counterfactual: a folder of edits per source photo (REFLECT).

``<source>/<source_id>/<edit>.*`` with an ``edits.csv`` manifest (or ``generator.pattern``):
every edit is one face, its source photo recorded in ``counterfactuals.parquet`` (the sampling
unit of the task tables). A source with one edit, a group outside the protocol, a missing
manifest column, an image without a row and a row without an image are one line each, naming
the file/row and the valid choices, and nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from import_fixtures import import_params
from PIL import Image

from stylisticbias import schemas
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.dataset.counterfactual_sets import read_sets
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.judge.run import task_units
from stylisticbias.spec.parse import config_from_params

SOURCE = "data/import/focus"
EDITS = {  # source photo -> edit stem -> (race, gender)
    "ceo01": {"wf": ("White", "female"), "bm": ("Black", "male"), "af": ("Asian", "female")},
    "nurse02": {"lm": ("Latino", "male"), "mef": ("Middle Eastern", "female")},
}


def _params(*overrides: str) -> dict:
    return import_params(
        "experiment=reflect-demo",
        "generator.layout=counterfactual",
        f"generator.source={SOURCE}",
        *overrides,
    )


def _image(path: Path, seed: int, ext: str = ".png") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 255, size=(24, 24, 3), dtype=np.uint8)).save(
        path.with_suffix(ext)
    )


def _manifest(rows: list[tuple[str, str, str, str]], header: str = "source_id,edit,race,gender"):
    return header + "\n" + "".join(",".join(r) + "\n" for r in rows)


ROWS = [(s, e, r, g) for s, edits in EDITS.items() for e, (r, g) in edits.items()]


@pytest.fixture
def focus(project: Path) -> Path:
    root = project / SOURCE
    for i, (s, e, _, _) in enumerate(ROWS):
        _image(root / s / e, i, ".jpg" if i == 1 else ".png")
    (root / "edits.csv").write_text(_manifest(ROWS), encoding="utf-8")
    return root


def test_edits_become_faces_with_their_source_photo(project: Path, focus: Path) -> None:
    path = build_faces(config_from_params(_params()))
    faces = schemas.read_table(path, schemas.FACES)
    sets = read_sets(path.parent)
    assert sets is not None and len(faces) == len(sets) == 5
    assert list(faces["face_id"]) == [f"{s}-{e}" for s, e, _, _ in ROWS]
    assert list(faces["ethnicity"]) == [r for _, _, r, _ in ROWS]  # the manifest's race column
    assert list(faces["gender"]) == [g for *_, g in ROWS]
    assert set(faces["age"]) == {"adult"} and set(faces["body_type"]) == {"unspecified"}
    assert list(sets["source_id"]) == [s for s, *_ in ROWS]
    assert list(sets["edit"]) == [e for _, e, _, _ in ROWS]
    assert sets["changed_outside"].isna().all()  # imported edits carry no mask
    var = schemas.read_table(build_variations(config_from_params(_params())), schemas.VARIATIONS)
    assert var.empty  # the edits are the faces; REFLECT has no attribute grid
    # the bytes are the user's images
    jpg = faces.loc[faces["face_id"] == "ceo01-bm", "path"].iloc[0]
    assert (path.parent / jpg).read_bytes() == (focus / "ceo01" / "bm.jpg").read_bytes()
    # the judge pairs edits of one source only; the source is the unit
    singles, pairs = task_units(faces, sets)
    assert {u for *_, u in singles} == {"ceo01", "nurse02"}
    assert sorted(u for u, _, _ in pairs) == ["ceo01"] * 3 + ["nurse02"]


def test_pattern_instead_of_a_manifest(project: Path) -> None:
    root = project / SOURCE
    for i, (s, stem) in enumerate(
        [
            ("p1", "asian_female"),
            ("p1", "middle eastern_male"),
            ("p2", "black_female"),
            ("p2", "white_male"),
        ]
    ):
        _image(root / s / stem, i)
    path = build_faces(config_from_params(_params("generator.pattern='{ethnicity}_{gender}'")))
    faces = schemas.read_table(path, schemas.FACES)
    assert list(zip(faces["ethnicity"], faces["gender"])) == [
        ("Asian", "female"),
        ("Middle Eastern", "male"),
        ("Black", "female"),
        ("White", "male"),
    ]
    assert list(read_sets(path.parent)["source_id"]) == ["p1", "p1", "p2", "p2"]


CASES = {  # name -> (phrase of the one line, what it names)
    "one_edit": (
        "source photo solo has one edit (x.png); a counterfactual set needs two",
        "edits.csv line 7 (solo/x)",
    ),
    "unknown_group": (
        "has ethnicity 'Martian', outside the demographic grid; valid: White, "
        "Black, Asian, Latino, Middle Eastern",
        "edits.csv line 3 (ceo01/bm)",
    ),
    "no_row": ("no edits.csv row for source_id 'ceo01', edit 'extra'", "ceo01/extra.png"),
    "no_image": ("no image ceo01/zz.* in its folder", "edits.csv line 7 (ceo01/zz)"),
    "same_cell": ("source photo ceo01 has 2 edits of White x female", "edits.csv line 2"),
    "pattern_mismatch": ("file name 'af' does not match generator.pattern", "ceo01/af.png"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bad_edit_is_one_line_and_nothing_is_written(
    project: Path, focus: Path, case: str
) -> None:
    rows, over = list(ROWS), []
    if case == "one_edit":
        rows.append(("solo", "x", "Asian", "male"))
        _image(focus / "solo" / "x", 50)
    elif case == "unknown_group":
        rows[1] = ("ceo01", "bm", "Martian", "male")
    elif case == "no_row":
        _image(focus / "ceo01" / "extra", 51)
    elif case == "no_image":
        rows.append(("ceo01", "zz", "Latino", "female"))
    elif case == "same_cell":
        rows[2] = ("ceo01", "af", "White", "female")
    elif case == "pattern_mismatch":
        over = ["generator.pattern='{ethnicity}_{gender}'"]
    (focus / "edits.csv").write_text(_manifest(rows), encoding="utf-8")
    phrase, names = CASES[case]
    params = _params(*over)
    with pytest.raises(StylisticBiasError) as exc:
        build_faces(config_from_params(params))
    msg = str(exc.value)
    assert "\n" not in msg and phrase in msg and names in msg, msg
    assert "nothing was written" in msg
    assert not (project / params["paths"]["faces"]).exists()


def test_missing_manifest_column_names_the_valid_ones(project: Path, focus: Path) -> None:
    (focus / "edits.csv").write_text(
        _manifest([r[:3] for r in ROWS], "source_id,edit,race"), encoding="utf-8"
    )
    with pytest.raises(
        StylisticBiasError,
        match=r"edits.csv: missing column\(s\) gender; the "
        r"edits manifest needs source_id, edit, gender, race",
    ):
        build_faces(config_from_params(_params()))


def test_no_manifest_and_no_pattern(project: Path, focus: Path) -> None:
    (focus / "edits.csv").unlink()
    with pytest.raises(
        StylisticBiasError,
        match=r"needs edits.csv or edits.parquet .* or "
        r"generator.pattern \(e.g. \{gender\}_\{ethnicity\}\)",
    ):
        build_faces(config_from_params(_params()))


def test_skip_leaves_out_a_set_left_with_one_edit(project: Path, focus: Path) -> None:
    rows = list(ROWS)
    rows[4] = ("nurse02", "mef", "Martian", "female")
    (focus / "edits.csv").write_text(_manifest(rows), encoding="utf-8")
    path = build_faces(config_from_params(_params("generator.on_error=skip")))
    sets = read_sets(path.parent)
    assert list(sets["source_id"]) == ["ceo01"] * 3  # nurse02's other edit is alone: left out
    skipped = pd.read_parquet(path.parent / "skipped.parquet")
    assert sorted(skipped["check"]) == ["one_edit", "outside_grid"]
