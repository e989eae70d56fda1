"""generator=import refuses before it reads, is all or nothing, converts modes by a stated rule
and lists what it ignored: paths that leave the manifest's folder or (in place) the data root are
never opened; no memory address reaches a message or the ``reason`` column; a corrupt variation
stops ``faces`` before ``data/<protocol>/faces`` is swapped; 16-bit grayscale and alpha are
converted (and warned about); unclaimed files are listed; a huge image is our one line, not
Pillow's warning."""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from import_fixtures import import_params, meta_of, output, write_release, write_table
from PIL import Image

from stylisticbias import schemas
from stylisticbias.benchmark import Benchmark
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.dataset.imaging import to_rgb
from stylisticbias.dataset.importer import images as import_images
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.predict_core import decode_image
from stylisticbias.spec.parse import config_from_params

RELEASE = Path("data/import/release")
TABLE = "data/import/set.csv"


def _faces(params: dict) -> Path:
    return build_faces(config_from_params(params))


def _variations(params: dict) -> Path:
    return build_variations(config_from_params(params))


def _table_params(*overrides: str) -> dict:
    return import_params("generator.layout=table", f"generator.source={TABLE}", *overrides)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every path the import's image check reads (all through ``read_regular``)."""
    seen: list[Path] = []
    real = import_images.read_regular

    def spy(path: Path, *args: object, **kwargs: object) -> bytes:
        seen.append(Path(os.path.abspath(path)))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(import_images, "read_regular", spy)
    return seen


def test_paths_leaving_the_manifest_folder_are_refused_unread(
    project: Path, bench: Benchmark, opened: list[Path]
) -> None:
    written = write_release(project / RELEASE, bench, 2)
    write_table(project / RELEASE, project / TABLE, written, bench)
    secret = project / "secret.png"  # outside the manifest's folder (data/import)
    Image.new("RGB", (48, 48), (1, 2, 3)).save(secret)
    for line, path in ((3, str(secret)), (4, "../../secret.png")):  # absolute, climbing out
        write_table(project / RELEASE, project / TABLE, written, bench)
        df = pd.read_csv(project / TABLE, dtype=str, keep_default_na=False)
        df.loc[line - 2, "path"] = path
        df.to_csv(project / TABLE, index=False)
        with pytest.raises(StylisticBiasError) as exc:
            _faces(_table_params())
        msg = str(exc.value)
        assert "\n" not in msg and f"set.csv line {line}" in msg and "refused, not read" in msg
        assert "0x" not in msg and "unsafe_path" in msg, msg
        assert secret.resolve() not in {p.resolve() for p in opened}
    assert not output(project, "faces").exists()
    # policy skip: listed with its reason, the rest imported, the file still never opened
    df.loc[2, "path"] = str(secret)
    df.to_csv(project / TABLE, index=False)
    params = _table_params("generator.on_error=skip")
    faces = schemas.read_table(_faces(params), schemas.FACES)
    var = schemas.read_table(_variations(params), schemas.VARIATIONS)
    skipped = pd.read_parquet(output(project, "variations", params) / "skipped.parquet")
    assert list(skipped["check"]) == ["unsafe_path"]
    assert skipped["reason"].str.contains("leaves the manifest's folder").all()
    assert (faces["status"] == "ok").all() and len(faces) == 2
    assert len(var) == len(df) - 3 and (var["status"] == "ok").all()
    assert opened and secret.resolve() not in {p.resolve() for p in opened}  # the spy sees reads


def test_reference_symlink_out_of_the_data_root_is_refused_unread(
    project: Path, bench: Benchmark, opened: list[Path]
) -> None:
    written = write_release(project / RELEASE, bench, 1)
    outside = project / "outside.png"
    Image.new("RGB", (48, 48), (9, 9, 9)).save(outside)
    img = written[0].variations["hair-color--gray"]
    img.unlink()
    img.symlink_to(outside)
    with pytest.raises(StylisticBiasError) as exc:
        _faces(import_params("generator.materialize=reference"))
    msg = str(exc.value)
    assert "\n" not in msg and meta_of(img).name in msg and "link leading out" in msg, msg
    assert outside.resolve() not in {Path(os.path.realpath(p)) for p in opened}
    # copied in, the link is fine: its bytes enter data/ and nothing reads it in place later
    _faces(import_params())
    var = schemas.read_table(_variations(import_params()), schemas.VARIATIONS)
    assert (var["status"] == "ok").all()


def test_no_memory_address_in_messages_or_the_reason_column(
    project: Path, bench: Benchmark
) -> None:
    written = write_release(project / RELEASE, bench, 2)
    img = written[1].variations["eyewear--sunglasses"]
    img.write_text("not an image at all\n")  # Pillow: cannot identify <_io.BytesIO at 0x..>
    with pytest.raises(StylisticBiasError) as exc:
        _faces(import_params())
    assert "corrupt image" in str(exc.value) and "0x" not in str(exc.value), exc.value
    _faces(import_params("generator.on_error=skip"))
    _variations(import_params("generator.on_error=skip"))
    for d in ("faces", "variations"):
        skipped = pd.read_parquet(output(project, d) / "skipped.parquet")
        assert not skipped["reason"].str.contains("0x").any()
    var = pd.read_parquet(output(project, "variations") / "variations.parquet")
    bad = var[var["status"] == "error"]
    assert len(bad) == 1 and "not an image format" in bad["reason"].iloc[0]
    assert not var["reason"].fillna("").str.contains("0x").any()


def _files(project: Path) -> dict[Path, bytes]:
    return {
        p: p.read_bytes()
        for d in ("faces", "variations")
        for p in output(project, d).rglob("*")
        if p.is_file()
    }


def test_stop_is_all_or_nothing_across_both_stages(project: Path, bench: Benchmark) -> None:
    written = write_release(project / RELEASE, bench, 2)
    params = import_params()
    _faces(params)
    _variations(params)
    before = _files(project)
    # the source changes: a new base face image and a corrupt variation
    base = written[0].folder / f"{written[0].stem}.png"
    Image.new("RGB", (48, 48), (0, 200, 0)).save(base)
    bad = written[1].variations["eyewear--sunglasses"]
    bad.write_bytes(bad.read_bytes()[:200])
    with pytest.raises(StylisticBiasError, match=r"corrupt image .*import faces: 1 problem"):
        _faces(params)
    after = _files(project)
    assert after == before  # neither output swapped in: the previous dataset is whole


def _sixteen_bit_grey(path: Path, level: int) -> None:
    Image.fromarray(np.full((48, 48), level, dtype=np.uint16)).save(path)


def _rgba(path: Path) -> None:
    a = np.zeros((48, 48, 4), dtype=np.uint8)
    a[..., 0] = 200  # red, fully transparent on the left half, opaque on the right
    a[:, 24:, 3] = 255
    Image.fromarray(a, "RGBA").save(path)


def test_mode_conversion_rule() -> None:
    grey = Image.fromarray(np.full((4, 4), 32896, dtype=np.uint16))
    assert grey.mode.startswith("I")
    assert np.asarray(grey.convert("RGB")).max() == 255  # Pillow alone: white
    assert (np.asarray(to_rgb(grey)) == 128).all()  # 32896 // 257
    a = np.zeros((2, 2, 4), dtype=np.uint8)
    a[..., 0], a[1, :, 3] = 200, 255
    got = np.asarray(to_rgb(Image.fromarray(a, "RGBA")))
    assert got[0].tolist() == [[255, 255, 255]] * 2 and got[1].tolist() == [[200, 0, 0]] * 2
    with pytest.raises(StylisticBiasError, match="float"):
        to_rgb(Image.fromarray(np.zeros((2, 2), np.float32)))


@pytest.mark.parametrize("materialize", ["copy", "reference"])
def test_16_bit_grey_and_alpha_are_converted_by_the_stated_rule_with_a_warning(
    project: Path, bench: Benchmark, caplog: pytest.LogCaptureFixture, materialize: str
) -> None:
    written = write_release(project / RELEASE, bench, 1)
    base = written[0].folder / f"{written[0].stem}.png"
    _sixteen_bit_grey(base, 32896)
    rgba = written[0].variations["hair-color--gray"]
    _rgba(rgba)
    params = import_params(f"generator.materialize={materialize}")
    with caplog.at_level(logging.WARNING):
        faces = schemas.read_table(_faces(params), schemas.FACES)
        var = schemas.read_table(_variations(params), schemas.VARIATIONS)
    text = caplog.text
    assert "16-bit grayscale scaled to 8 bits" in text and base.name in text
    assert "alpha channel composited on white" in text and rgba.name in text
    # what the judge sees: mid grey (not white); the transparent half white, the rest red
    seen = np.asarray(decode_image(str(output(project, "faces", params) / faces["path"].iloc[0])))
    assert (seen == 128).all()
    row = var.set_index("image_id").loc[f"{written[0].stem}-hair-color--gray"]
    px = np.asarray(decode_image(str(output(project, "variations", params) / row["path"])))
    assert (px[:, :24] == 255).all() and (px[:, 24:] == [200, 0, 0]).all()
    info = json.loads((output(project, "faces", params) / "import.json").read_text())
    assert list(info["converted"].values()) == ["16-bit grayscale scaled to 8 bits (value // 257)"]
    if materialize == "copy":  # stored converted: every later stage sees the same pixels
        stored = Image.open(output(project, "faces", params) / faces["path"].iloc[0])
        assert stored.mode == "RGB"


def test_ignored_files_are_listed(
    project: Path, bench: Benchmark, caplog: pytest.LogCaptureFixture
) -> None:
    written = write_release(project / RELEASE, bench, 1)
    (project / RELEASE / "README.txt").write_text("loose file at the root")
    (project / RELEASE / "loose.png").write_bytes(b"")
    img = written[0].variations["hair-color--gray"]
    meta = meta_of(img)
    misnamed = meta.with_name(meta.name.replace("_metadata.json", "_meta.json"))
    meta.rename(misnamed)
    params = import_params("generator.on_error=skip")
    with caplog.at_level(logging.WARNING):
        _faces(params)
        _variations(params)
    expected = sorted(
        ["README.txt", "loose.png", misnamed.relative_to(project / RELEASE).as_posix()]
    )
    imported = json.loads((output(project, "faces", params) / "import.json").read_text())
    assert imported["ignored_files"] == expected
    cov = json.loads((output(project, "variations", params) / "coverage.json").read_text())
    assert cov["ignored_files"] == expected
    assert "3 file(s) under data/import/release" in caplog.text and "README.txt" in caplog.text
    # the image of the misnamed metadata is itself listed as a row without metadata
    skipped = pd.read_parquet(output(project, "variations", params) / "skipped.parquet")
    assert (skipped["check"] == "no_metadata").sum() == 1


def test_a_huge_image_is_our_one_line_not_pillows_warning(
    project: Path, bench: Benchmark, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_release(project / RELEASE, bench, 1, size=48)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1500)  # 48 x 48 = 2304: over the limit
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        with pytest.raises(StylisticBiasError) as exc:
            _faces(import_params())
    msg = str(exc.value)
    assert "\n" not in msg and "decompression-bomb limit" in msg and "1,500 pixels" in msg, msg
    assert not [w for w in got if issubclass(w.category, Image.DecompressionBombWarning)]
