"""generator=import from a CSV/Parquet manifest: each bad row gives its one-line message."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from import_fixtures import import_params, write_release, write_table

from stylisticbias import schemas
from stylisticbias.benchmark import Benchmark
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.parse import config_from_params

TABLE = "data/import/set.csv"


def _params(*overrides: str) -> dict:
    return import_params("generator.layout=table", f"generator.source={TABLE}", *overrides)


@pytest.fixture
def table(project: Path, bench: Benchmark) -> pd.DataFrame:
    written = write_release(project / "data/import/release", bench, 3)
    write_table(project / "data/import/release", project / TABLE, written, bench)
    return pd.read_csv(project / TABLE, dtype=str, keep_default_na=False)


def _variation(df: pd.DataFrame, face: str, value: str) -> int:
    return int(df.index[(df["face_id"] == face) & (df["value"] == value)][0])


def _save(project: Path, df: pd.DataFrame) -> None:
    df.to_csv(project / TABLE, index=False)


def test_parquet_manifest_same_as_csv(project: Path, table: pd.DataFrame) -> None:
    faces, var = (
        schemas.read_table(build_faces(config_from_params(_params())), schemas.FACES),
        schemas.read_table(build_variations(config_from_params(_params())), schemas.VARIATIONS),
    )
    table.to_parquet(project / "data/import/set.parquet")
    p = _params("generator.source=data/import/set.parquet")
    faces2 = schemas.read_table(build_faces(config_from_params(p)), schemas.FACES)
    var2 = schemas.read_table(build_variations(config_from_params(p)), schemas.VARIATIONS)
    assert faces.equals(faces2) and var.equals(var2)
    assert len(var) == len(table) - 3 and set(var["value"]) >= {"Professional / Business formal"}


CASES = {  # name -> (edit of the table, phrase, the line it names, stage that stops)
    "missing_image": ("missing image nope.png", "faces"),
    "unreadable_image": ("unreadable image", "variations"),
    "corrupt_image": ("corrupt image", "variations"),
    "base_missing": ("variation whose base is missing (no base face 'person02'", "faces"),
    "duplicate": ("duplicate (face, attribute, value) person00 / Eyewear / Sunglasses", "faces"),
    "two_values": ("two values in one variation", "faces"),
    "outside_grid": ("has gender 'robot', outside the demographic grid", "faces"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bad_row_gives_its_message(project: Path, table: pd.DataFrame, case: str) -> None:
    df = table.copy()
    line = None
    if case == "missing_image":
        line = 0
        df.loc[0, "path"] = "release/nope.png"
    elif case == "unreadable_image":
        line = _variation(df, "person01", "Black")
        (project / "data/import/folder.png").mkdir()
        df.loc[line, "path"] = "folder.png"
    elif case == "corrupt_image":
        line = _variation(df, "person01", "Cap")
        img = project / "data/import" / df.loc[line, "path"]
        img.write_bytes(img.read_bytes()[:100])
    elif case == "base_missing":
        df = df.drop(index=df.index[(df["face_id"] == "person02") & (df["value"] == "")][0])
        df = df.reset_index(drop=True)
    elif case == "duplicate":
        i = _variation(df, "person00", "Sunglasses")
        df = pd.concat([df, df.loc[[i]]], ignore_index=True)
        line = len(df) - 1
    elif case == "two_values":
        i = _variation(df, "person00", "Freckles")
        extra = df.loc[[i]].assign(attribute="Skin irreg.", value="Acne")
        df = pd.concat([df.drop(index=_variation(df, "person00", "Acne")), extra])
        df = df.reset_index(drop=True)
        line = len(df) - 1
    elif case == "outside_grid":
        line = int(df.index[(df["face_id"] == "person01") & (df["value"] == "")][0])
        df.loc[line, "gender"] = "robot"
    _save(project, df)
    phrase, stage = CASES[case]
    params = _params()
    if stage == "variations":
        build_faces(config_from_params(params))
    with pytest.raises(StylisticBiasError) as exc:
        (build_faces if stage == "faces" else build_variations)(config_from_params(params))
    msg = str(exc.value)
    assert "\n" not in msg and phrase in msg and "set.csv line " in msg, msg
    if line is not None:
        assert f"set.csv line {line + 2}" in msg, msg  # the CSV line (header = line 1)
    assert not (project / "data" / stage).exists()


def test_missing_columns_and_unknown_attribute(project: Path, table: pd.DataFrame) -> None:
    _save(project, table.drop(columns=["body_type"]))
    with pytest.raises(StylisticBiasError, match=r"missing column\(s\) body_type"):
        build_faces(config_from_params(_params()))
    df = table.copy()
    df.loc[_variation(df, "person00", "Cap"), "attribute"] = "Headgear"
    _save(project, df)
    with pytest.raises(StylisticBiasError, match=r"attribute\(s\) 'Headgear'.*valid: Skin irreg\."):
        build_faces(config_from_params(_params()))
