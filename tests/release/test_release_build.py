"""The release folder: validated and read back by mlcroissant, checksums, card, licence rules,
byte-identical reruns, hard links, and one-line errors that leave the previous release whole."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path

import mlcroissant as mlc
import pandas as pd
import pytest
from release_project import REFUSED, project_params

from stylisticbias.config import load_group_option
from stylisticbias.errors import StylisticBiasError
from stylisticbias.release import build_release
from stylisticbias.release.table import COLUMNS
from stylisticbias.spec.parse import config_from_params

RAI = (
    "rai:dataCollection",
    "rai:dataLimitations",
    "rai:dataBiases",
    "rai:personalSensitiveInformation",
    "rai:hasSyntheticData",
    "rai:dataUseCases",
    "rai:dataSocialImpact",
)


@pytest.fixture
def release(project: Path) -> Path:
    return build_release(
        config_from_params(project_params(out="out/rel", date_published="2026-11-25"))
    ).out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _plain(v: object) -> object:
    """A value as mlcroissant yields it -> comparable with the Parquet's."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _records(ds: mlc.Dataset, rs: str) -> pd.DataFrame:
    rows = [{k.split("/", 1)[1]: _plain(v) for k, v in r.items()} for r in ds.records(rs)]
    return pd.DataFrame(rows)


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    a = a.astype(object).where(a.notna(), None).reset_index(drop=True)
    b = b[list(a.columns)].astype(object).where(b.notna(), None).reset_index(drop=True)
    assert len(a) == len(b)
    for col in a.columns:
        left, right = a[col].tolist(), b[col].tolist()
        if any(isinstance(x, float) for x in left + right):
            assert left == pytest.approx(right, nan_ok=True), col
        else:
            assert left == right, col


def test_mlcroissant_validates_and_loads_every_record(release: Path) -> None:
    doc = json.loads((release / "croissant.json").read_text())
    assert doc["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    for key in RAI:
        assert doc[key] not in (None, "", []), key
    assert doc["rai:hasSyntheticData"] is True and doc["license"] == "CC-BY-4.0"
    ds = mlc.Dataset(release / "croissant.json")
    assert not ds.metadata.ctx.issues.errors, ds.metadata.ctx.issues.report()
    assert not ds.metadata.ctx.issues.warnings, ds.metadata.ctx.issues.report()

    table = pd.read_parquet(release / "images.parquet")
    assert list(table.columns) == [c.name for c in COLUMNS]
    _same(_records(ds, "images"), table)
    for kind in ("judgments", "scores"):
        _same(
            _records(ds, f"{kind}-simulated-weak"),
            pd.read_parquet(release / kind / "simulated-weak.parquet"),
        )
    # the image files: one record per ok image, its pixels decoded
    ok = table[table["status"] == "ok"]
    files = [
        _plain(r["images-variations-files/file_name"])
        for r in ds.records("images-variations-files")
    ]
    assert len(files) == int((ok["is_base"] == False).sum())  # noqa: E712
    assert {Path(str(f)).name for f in files} == {
        Path(f).name for f in ok.loc[~ok["is_base"], "file_name"]
    }


def test_checksums_rows_and_refusals(release: Path, project: Path) -> None:
    doc = json.loads((release / "croissant.json").read_text())
    objects = [d for d in doc["distribution"] if d["@type"] == "cr:FileObject"]
    assert {d["contentUrl"] for d in objects} >= {
        "images.parquet",
        "protocol/stylisticbias.yaml",
        "judgments/simulated-weak.parquet",
        "scores/simulated-weak.parquet",
    }
    for d in objects:
        assert d["sha256"] == _sha(release / d["contentUrl"]), d["contentUrl"]
    table = pd.read_parquet(release / "images.parquet")
    paths = project_params()["paths"]
    faces = pd.read_parquet(project / paths["faces"] / "faces.parquet")
    var = pd.read_parquet(project / paths["variations"] / "variations.parquet")
    assert len(table) == len(faces) + len(var) and table["is_base"].sum() == len(faces)
    for row in table[table["status"] == "ok"].itertuples():
        f = release / row.file_name
        assert _sha(f) == row.sha256 and f.stat().st_size == row.size_bytes
    refused = table[table["value"] == REFUSED]
    assert len(refused) and (refused["status"] == "refused").all()
    assert (refused["file_name"] == "").all() and refused["reason"].str.contains("policy").all()
    settings = json.loads(table["generator_settings"].iloc[0])
    assert settings["_target_"] == "fake_generator.FakeGenerator"
    assert (release / "protocol/stylisticbias.yaml").read_bytes() == (
        project / "conf/benchmark/stylisticbias.yaml"
    ).read_bytes()


def test_dataset_card(release: Path) -> None:
    text = (release / "README.md").read_text()
    head = text.split("---")[1]
    assert "license: cc-by-4.0" in head and "data_files: images.parquet" in head
    for heading in (
        "## Uses",
        "### Out-of-Scope Use",
        "## Dataset Structure",
        "## Dataset Creation",
        "### Personal and Sensitive Information",
        "## Bias, Risks, and Limitations",
        "## Citation",
        "## License",
    ):
        assert f"\n{heading}\n" in text, heading
    assert "SIMULATED judgments" in text


def test_rerun_is_byte_identical_and_hardlinks(project: Path) -> None:
    a = build_release(config_from_params(project_params(out="out/a"))).out
    b = build_release(config_from_params(project_params(out="out/b", materialize="copy"))).out
    for name in ("croissant.json", "README.md", "images.parquet"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    table = pd.read_parquet(a / "images.parquet")
    first = table[table["is_base"]].iloc[0]
    src = project / project_params()["paths"]["faces"] / "images" / Path(first["file_name"]).name
    assert (a / first["file_name"]).stat().st_ino == src.stat().st_ino  # hard link
    assert (b / first["file_name"]).stat().st_ino != src.stat().st_ino  # copy


def test_imported_set_needs_its_licence(project: Path) -> None:
    params = project_params(out="out/imp")
    params["generator"] = {
        **{k: v for k, v in load_group_option("generator", "import").items() if k != "name"},
        "source": "data/import/release",
        "license": None,
    }
    with pytest.raises(StylisticBiasError, match=r"generator\.license is not set"):
        build_release(config_from_params(params))
    assert not (project / "out/imp").exists()
    params["generator"]["license"] = "CC-BY-NC-4.0"
    out = build_release(config_from_params(params)).out
    doc = json.loads((out / "croissant.json").read_text())
    assert doc["license"] == "CC-BY-NC-4.0"  # the configured one, not release.license
    assert doc["rai:hasSyntheticData"] is False
    assert "license: cc-by-nc-4.0" in (out / "README.md").read_text()


def test_bad_input_is_one_line_and_keeps_the_previous_release(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(StylisticBiasError, match=r"release\.out='data'.*into or over the project"):
        build_release(config_from_params(project_params(out="data")))
    # a changed image stops the release; the previous one stays whole
    copy = tmp_path / "p"
    shutil.copytree(project, copy, symlinks=True)
    monkeypatch.chdir(copy)
    old = build_release(config_from_params(project_params(out="rel"))).out
    before = (old / "croissant.json").read_bytes()
    img = next((copy / project_params()["paths"]["variations"] / "images").rglob("*.png"))
    img.unlink()
    img.write_bytes(b"not the image")
    with pytest.raises(StylisticBiasError, match=r"sha256 differs from the variations manifest"):
        build_release(config_from_params(project_params(out="rel")))
    assert (old / "croissant.json").read_bytes() == before
