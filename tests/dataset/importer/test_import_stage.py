"""generator=import: the faces/variations stages on the paper's release layout, every check,
both policies, the three ways of placing images, atomic outputs, unmapped spellings."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from import_fixtures import BREAKERS, PAPER_SPELLING, import_params, meta_of, output, write_release

from stylisticbias import schemas
from stylisticbias.benchmark import Benchmark
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.items import judge_items
from stylisticbias.spec.parse import config_from_params

RELEASE = Path("data/import/release")


def _import(params: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    faces = schemas.read_table(build_faces(config_from_params(params)), schemas.FACES)
    var = schemas.read_table(build_variations(config_from_params(params)), schemas.VARIATIONS)
    return faces, var


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_release_full_grid_imports_with_paper_spellings(project: Path, bench: Benchmark) -> None:
    written = write_release(project / RELEASE, bench, 3, evaluated_only=False)
    faces, var = _import(import_params())
    assert list(faces["face_id"]) == [f.stem for f in written]
    assert (faces["status"] == "ok").all() and (faces["generator"] == "import").all()
    for f in written:  # demographics from the metadata JSON
        row = faces.set_index("face_id").loc[f.stem]
        assert (row.age, row.gender, row.ethnicity, row.body_type) == (
            f.spec.age,
            f.spec.gender,
            f.spec.ethnicity,
            f.spec.body_type,
        )
    # the full grid: 48 values per male face, 51 per female face; evaluated flag from conf
    n = var.groupby("face_id").size()
    for f in written:
        assert n[f.stem] == (48 if f.spec.gender == "male" else 51)
    by_slug = {v.slug: v for v in bench.variations}
    for r in var.itertuples():
        v = by_slug[r.image_id.split("-", 1)[1]]
        assert (r.attribute, r.value, r.category, r.framing, bool(r.evaluated)) == (
            v.attribute,
            v.value,
            v.category,
            v.framing,
            v.evaluated,
        )
        src = written[[f.stem for f in written].index(r.face_id)].variations[v.slug]
        assert _sha(output(project, "variations") / r.path) == r.sha256 == _sha(src)
    # the paper's spellings that differ from ours arrived under our values
    for ours in PAPER_SPELLING:
        assert (var["value"] == ours).any()
    # the judge reads them unchanged: base faces + evaluated variations
    items = judge_items(config_from_params(import_params()))
    assert len(items) == 3 + int(var["evaluated"].sum())
    assert all(Path(it.path).exists() for it in items)
    skipped = pd.read_parquet(output(project, "variations") / "skipped.parquet")
    assert skipped.empty
    info = json.loads((output(project, "faces") / "import.json").read_text())
    assert info["source"].startswith("data/import/release (the paper's release layout, copied")
    cov = json.loads((output(project, "variations") / "coverage.json").read_text())
    assert cov["evaluated_present"] == cov["evaluated_expected"] == int(var["evaluated"].sum())
    assert cov["cells_with_faces"] == 3 and cov["cells_total"] == 90
    html = (output(project, "variations") / "gallery.html").read_text()
    assert "Imported image set: coverage" in html and "data/import/release" in html


EXPECTED = {  # check -> (phrase in the message, stage that stops: faces checks every image)
    "missing_image": ("missing image", "faces"),
    "unreadable_image": ("unreadable image", "faces"),
    "corrupt_image": ("corrupt image", "faces"),
    "base_missing": ("variation whose base is missing", "faces"),
    "duplicate": ("duplicate (face, attribute, value)", "faces"),
    "two_values": ("two values in one variation", "faces"),
    "outside_grid": ("outside the demographic grid", "faces"),
}


@pytest.mark.parametrize("check", sorted(BREAKERS))
def test_each_bad_case_stops_with_one_line_naming_the_file(
    project: Path, bench: Benchmark, check: str
) -> None:
    written = write_release(project / RELEASE, bench, 4)
    bad = BREAKERS[check](written)
    phrase, stage = EXPECTED[check]
    # an earlier, complete output must survive the failed import untouched
    params = import_params()
    for d in ("faces", "variations"):
        output(project, d, params).mkdir(parents=True)
        (output(project, d, params) / "earlier.txt").write_text("earlier output")
    if stage == "variations":
        build_faces(config_from_params(params))
    with pytest.raises(StylisticBiasError) as exc:
        (build_faces if stage == "faces" else build_variations)(config_from_params(params))
    msg = str(exc.value)
    assert "\n" not in msg and phrase in msg, msg
    assert bad.name in msg or meta_of(bad).name in msg, msg
    summary = re.search(r"problem\(s\): (.*); nothing was written", msg)
    assert summary, msg  # that check only (and the variations of a face it left out)
    assert {c.split()[1] for c in summary.group(1).split(", ")} <= {check, "base_skipped"}, msg
    assert (output(project, stage, params) / "earlier.txt").read_text() == "earlier output"
    siblings = output(project, stage, params).parent.iterdir()  # where a swap stages its folders
    assert not any(p.name.endswith((".tmp", ".old")) for p in siblings)


def test_skip_policy_lists_every_bad_row_with_its_reason(project: Path, bench: Benchmark) -> None:
    written = write_release(project / RELEASE, bench, 5)
    broken = {check: fn(written) for check, fn in BREAKERS.items()}
    faces, var = _import(import_params("generator.on_error=skip"))
    skipped = pd.concat(
        [pd.read_parquet(output(project, d) / "skipped.parquet") for d in ("faces", "variations")]
    )
    for check, path in broken.items():
        rows = skipped[skipped["check"] == check]
        assert len(rows) >= 1, check
        assert rows["reason"].str.contains(EXPECTED[check][0], regex=False).all(), check
        names = {path.name, meta_of(path).name}
        assert any(any(n in s for n in names) for s in rows["source"]), (check, rows["source"])
    # outside the grid: face left out, its variations skipped as "base skipped"
    martian = written[2].stem
    assert martian not in set(faces["face_id"])
    assert (skipped[skipped["face_id"] == martian]["check"] == "base_skipped").sum() == len(
        written[2].variations
    )
    # base missing: the last face's variations all skipped
    assert (skipped["face_id"] == written[-1].stem).sum() == len(written[-1].variations)
    # duplicate: both images skipped, the value absent from the manifest
    dup = skipped[skipped["check"] == "duplicate"]
    assert len(dup) == 2 and set(dup["value"]) == {"Cap"}
    assert not ((var["face_id"] == written[1].stem) & (var["value"] == "Cap")).any()
    # image problems of valid rows stay in the manifest as status error, with the reason
    err = var[var["status"] == "error"]
    assert set(err["reason"].str.extract(r"(missing|unreadable|corrupt) image")[0]) == {
        "missing",
        "unreadable",
        "corrupt",
    }
    assert err["path"].isna().all() and err["sha256"].isna().all()
    assert (var[var["status"] == "ok"]["sha256"].str.len() == 64).all()
    # coverage: what is missing relative to the design
    cov = json.loads((output(project, "variations") / "coverage.json").read_text())
    per_face = {p["face_id"]: p for p in cov["per_face"]}
    assert set(per_face) == {written[i].stem for i in (0, 1, 3)}
    f0 = per_face[written[0].stem]
    assert f0["evaluated_expected"] == 31 and f0["evaluated_present"] == 31 - 3
    assert {"Hair color / Blonde", "Hair color / Black", "Hair length / Long"} == set(
        f0["missing_evaluated"]
    )
    assert cov["variations_skipped"] == len(skipped[skipped["kind"] == "variation"])
    judged = {
        it.image_id
        for it in judge_items(config_from_params(import_params("generator.on_error=skip")))
    }
    assert judged == set(faces["image_id"]) | set(
        var[(var["status"] == "ok") & var["evaluated"]]["image_id"]
    )


def test_unmapped_values_are_one_error_listing_them_and_the_valid_ones(
    project: Path, bench: Benchmark
) -> None:
    written = write_release(project / RELEASE, bench, 2)
    for slug, val in (("hair-color--blonde", "Platinum"), ("eyewear--sunglasses", "Shades")):
        m = meta_of(written[0].variations[slug])
        data = json.loads(m.read_text())
        data["characteristics"]["variation"] = {slug.split("--")[0].replace("-", "_"): val}
        m.write_text(json.dumps(data))
    with pytest.raises(StylisticBiasError) as exc:
        build_faces(
            config_from_params(import_params("generator.on_error=skip"))
        )  # unmapped: an error either way
    msg = str(exc.value)
    assert "'Platinum'" in msg and "'Shades'" in msg and "Black, Brown, Blonde" in msg, msg
    assert "Thick-rimmed" in msg and "generator.aliases" in msg and "\n" not in msg
    assert not output(project, "faces").exists()
    # an alias maps one, `to: null` leaves the other out on purpose (listed as skipped)
    aliases = (
        "+generator.aliases=[{field: value, attribute: hair_color, from: Platinum, to: Blonde},"
        "{field: value, attribute: Eyewear, from: Shades, to: null}]"
    )
    params = import_params("generator.on_error=skip")
    params["generator"]["aliases"] = [
        {"field": "value", "attribute": "hair_color", "from": "Platinum", "to": "Blonde"},
        {"field": "value", "attribute": "Eyewear", "from": "Shades", "to": None},
    ]
    assert aliases  # the same as a command-line override
    _, var = _import(params)
    f0 = var[var["face_id"] == written[0].stem]
    assert (f0["value"] == "Blonde").sum() == 1 and not (f0["value"] == "Sunglasses").any()
    skipped = pd.read_parquet(output(project, "variations", params) / "skipped.parquet")
    assert list(skipped["check"]) == ["excluded"]


def test_reference_in_place_stores_paths_relative_to_the_manifest(
    project: Path, bench: Benchmark
) -> None:
    written = write_release(project / RELEASE, bench, 2)
    params = import_params("generator.materialize=reference")
    faces, var = _import(params)
    assert not (output(project, "faces", params) / "images").exists()
    assert not (output(project, "variations", params) / "images").exists()
    f0 = written[0]
    row = faces.set_index("face_id").loc[f0.stem]
    # relative to each manifest's folder (data/<protocol>/faces, .../variations)
    up = Path(os.path.relpath(project / RELEASE, output(project, "faces", params))).as_posix()
    assert up == "../../import/release"
    assert row.path == f"{up}/{f0.stem}/{f0.stem}.png"
    assert all(p.startswith(f"{up}/") for p in var["path"])
    for it in judge_items(
        config_from_params(params)
    ):  # the judge's own path resolution finds the source files
        assert Path(it.path).resolve().is_relative_to((project / RELEASE).resolve())
    # a changed source image changes the manifest's hash on the next import
    img = f0.variations["hair-color--gray"]
    before = var.set_index("image_id").loc[f"{f0.stem}-hair-color--gray", "sha256"]
    from PIL import Image

    Image.new("RGB", (48, 48), (200, 10, 10)).save(img)
    _, var2 = _import(params)
    after = var2.set_index("image_id").loc[f"{f0.stem}-hair-color--gray", "sha256"]
    assert before != after == _sha(img)
    # the variations stage re-checks the base images' bytes against faces.parquet
    base = f0.folder / f"{f0.stem}.png"
    Image.new("RGB", (48, 48), (0, 0, 0)).save(base)
    with pytest.raises(StylisticBiasError, match="sha256 differs"):
        build_variations(config_from_params(params))


def test_reference_outside_the_data_root_is_refused(project: Path, bench: Benchmark) -> None:
    write_release(project / "elsewhere", bench, 1)
    params = import_params("generator.materialize=reference", "generator.source=elsewhere")
    with pytest.raises(StylisticBiasError, match="inside the data root"):
        build_faces(config_from_params(params))
    faces, _ = _import(import_params("generator.source=elsewhere"))  # copying is fine
    assert (faces["status"] == "ok").all()


def test_hardlink_shares_the_source_bytes(project: Path, bench: Benchmark) -> None:
    written = write_release(project / RELEASE, bench, 1)
    faces, _ = _import(import_params("generator.materialize=hardlink"))
    src = written[0].folder / f"{written[0].stem}.png"
    dest = output(project, "faces") / faces["path"].iloc[0]
    assert dest.stat().st_ino == src.stat().st_ino


def test_bad_settings_are_one_line_with_the_valid_choices(project: Path) -> None:
    from stylisticbias.config import compose
    from stylisticbias.validate import validate_params

    for override, needle in (
        ("generator.layout=folder", "valid: release, table"),
        ("generator.materialize=move", "valid: reference, copy, hardlink"),
        ("generator.on_error=ignore", "valid: stop, skip"),
    ):
        with pytest.raises(StylisticBiasError, match=needle):
            validate_params(compose(["generator=import", override]))
    with pytest.raises(StylisticBiasError, match="not a folder"):
        build_faces(config_from_params(import_params("generator.source=data/import/nothing")))
