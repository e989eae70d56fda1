"""Image sets for the import tests, drawn procedurally: the paper's release layout and a table.

The release layout is written exactly as the paper's generation code writes it
(``timo-cavelius/StylisticBias``: ``generation/main.py``, ``banana_pipeline.py``,
``image_saver.py``): one folder per base face named after the base image's stem, the base's
``<stem>_metadata.json`` with ``characteristics`` = the demographic cell, and per variation
``<stem>_face_<k>_<YYYYmmdd_HHMMSS>_<id8>.png`` (``_body_`` for fashion styles) beside its
``_metadata.json`` whose ``characteristics`` hold ``base``, ``variation`` = {feature key: value}
and ``prompt``. Values are spelled as the paper's ``config/variation_features.json``.
"""

from __future__ import annotations

import atexit
import csv
import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from stylisticbias.benchmark import Benchmark, VariationValue
from stylisticbias.config import compose
from stylisticbias.generators.base import FaceSpec
from stylisticbias.generators.procedural import ProceduralGenerator

#: The paper's spelling of the values our benchmark spells differently (variation_features.json).
PAPER_SPELLING = {
    "Unnatural": "Unnatural color",
    "Neutral": "Neutral lipstick",
    "Bold": "Bold color",
}

CELLS = [  # (age, gender, ethnicity, body_type) of the test faces
    ("young adult", "male", "Asian", "thin"),
    ("elderly", "female", "African", "obese"),
    ("middle-aged adult", "female", "European", "normal"),
    ("young adult", "male", "Latino", "normal"),
    ("elderly", "male", "Middle Eastern", "thin"),
    ("middle-aged adult", "female", "Latino", "obese"),
]


@dataclass(frozen=True)
class FaceFiles:
    """What was written for one base face."""

    stem: str
    folder: Path
    spec: FaceSpec
    variations: dict[str, Path]  # variation slug -> image path


def _stem(i: int) -> str:
    return f"face_{i + 1}_20250611_0930{i:02d}_{hashlib.sha1(str(i).encode()).hexdigest()[:8]}"


def values_for(
    bench: Benchmark, gender: str, *, evaluated_only: bool = True
) -> list[VariationValue]:
    """The values a face of ``gender`` gets in these fixtures."""
    return bench.variations_for(gender, evaluated_only=evaluated_only)


def write_release(
    root: Path, bench: Benchmark, n_faces: int = 4, *, size: int = 48, evaluated_only: bool = True
) -> list[FaceFiles]:
    """Render ``n_faces`` faces and their variations into ``root`` in the release layout.

    Face ``i`` is the same whatever ``n_faces``: each is rendered once per test process
    (:func:`_rendered`) and copied (tests break their copy's files)."""
    out = []
    for i in range(n_faces):
        master = _rendered(i, bench, size, evaluated_only)
        folder = root / master.stem
        shutil.copytree(master.folder, folder)
        files = {slug: folder / p.name for slug, p in master.variations.items()}
        out.append(FaceFiles(master.stem, folder, master.spec, files))
    return out


_MASTERS = Path(tempfile.mkdtemp(prefix="import-fixtures-"))
atexit.register(shutil.rmtree, _MASTERS, True)
_RENDERED: dict[tuple[object, ...], FaceFiles] = {}


def _rendered(i: int, bench: Benchmark, size: int, evaluated_only: bool) -> FaceFiles:
    """Face ``i`` rendered into a folder of this process's master copies, once."""
    key = (i, size, evaluated_only, bench.digest or repr(bench))
    if key not in _RENDERED:
        _RENDERED[key] = _render_face(
            _MASTERS / str(len(_RENDERED)), i, bench, size, evaluated_only
        )
    return _RENDERED[key]


def _render_face(
    root: Path, i: int, bench: Benchmark, size: int, evaluated_only: bool
) -> FaceFiles:
    """Render face ``i`` and its variations into ``root/<stem>`` in the release layout."""
    gen = ProceduralGenerator(size=size)
    age, gender, eth, body = CELLS[i % len(CELLS)]
    stem = _stem(i)
    folder = root / stem
    folder.mkdir(parents=True)
    prompt = bench.base_face_prompt(age=age, gender=gender, ethnicity=eth, body_type=body)
    spec = FaceSpec(stem, age, gender, eth, body, 1000 + i, prompt)
    Image.fromarray(gen.render_face(spec)).save(folder / f"{stem}.png")
    _json(
        folder / f"{stem}_metadata.json",
        {
            "image_path": f"output/images/{stem}.png",
            "characteristics": {
                "age": age,
                "gender": gender,
                "ethnicity": eth,
                "body_type": body,
            },
            "prompt": prompt,
            "timestamp": "2025-06-11T09:30:00",
        },
    )
    files = {}
    for k, v in enumerate(values_for(bench, gender, evaluated_only=evaluated_only), 1):
        kind = "body" if v.framing == "full_body" else "face"
        uid = hashlib.sha1(f"{i}-{k}".encode()).hexdigest()[:8]
        name = f"{stem}_{kind}_{k}_20250611_1000{k:02d}_{uid}"
        Image.fromarray(gen.render_edit(spec, v)).save(folder / f"{name}.png")
        vprompt = bench.variation_prompt(v, gender=gender)
        _json(
            folder / f"{name}_metadata.json",
            {
                "image_path": f"output/banana/{stem}/{name}.png",
                "characteristics": {
                    "base": f"{stem}.png",
                    "variation": {v.key: PAPER_SPELLING.get(v.value, v.value)},
                    "prompt": vprompt,
                },
                "prompt": vprompt,
                "timestamp": "2025-06-11T10:00:00",
            },
        )
        files[v.slug] = folder / f"{name}.png"
    return FaceFiles(stem, folder, spec, files)


def _json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def meta_of(image: Path) -> Path:
    """The ``_metadata.json`` beside an image."""
    return image.with_name(image.stem + "_metadata.json")


# --------------------------------------------------------------------------- broken cases
def break_missing_image(faces: list[FaceFiles], slug: str = "hair-color--blonde") -> Path:
    """Delete a variation's image (its metadata stays)."""
    img = faces[0].variations[slug]
    img.unlink()
    return img


def break_unreadable_image(faces: list[FaceFiles], slug: str = "hair-color--black") -> Path:
    """Replace a variation's image by a folder of the same name (cannot be read, even by root)."""
    img = faces[0].variations[slug]
    img.unlink()
    img.mkdir()
    return img


def break_corrupt_image(faces: list[FaceFiles], slug: str = "eyewear--sunglasses") -> Path:
    """Truncate a variation's PNG."""
    img = faces[1].variations[slug]
    data = img.read_bytes()
    img.write_bytes(data[: len(data) // 2])
    return img


def break_base_missing(faces: list[FaceFiles]) -> Path:
    """Remove the last face's base image and metadata: its variations lose their base."""
    f = faces[-1]
    (f.folder / f"{f.stem}.png").unlink()
    (f.folder / f"{f.stem}_metadata.json").unlink()
    return f.folder


def break_duplicate(faces: list[FaceFiles], slug: str = "accessories--cap") -> Path:
    """A second image of the same (face, attribute, value) under a later timestamp."""
    img = faces[1].variations[slug]
    dup = img.with_name(img.stem[:-8] + "deadbeef.png")  # same face and k, another request id
    shutil.copyfile(img, dup)
    shutil.copyfile(meta_of(img), meta_of(dup))
    return dup


def break_two_values(faces: list[FaceFiles], slug: str = "hair-length--long") -> Path:
    """A variation whose metadata names two values."""
    img = faces[0].variations[slug]
    m = meta_of(img)
    data = json.loads(m.read_text())
    data["characteristics"]["variation"]["eyewear"] = "Sunglasses"
    _json(m, data)
    return m


def break_outside_grid(faces: list[FaceFiles], index: int = 2) -> Path:
    """A face whose ethnicity is not in the grid."""
    f = faces[index]
    m = f.folder / f"{f.stem}_metadata.json"
    data = json.loads(m.read_text())
    data["characteristics"]["ethnicity"] = "Martian"
    _json(m, data)
    return m


BREAKERS = {
    "missing_image": break_missing_image,
    "unreadable_image": break_unreadable_image,
    "corrupt_image": break_corrupt_image,
    "base_missing": break_base_missing,
    "duplicate": break_duplicate,
    "two_values": break_two_values,
    "outside_grid": break_outside_grid,
}


# --------------------------------------------------------------------------- table layout
def write_table(release: Path, table: Path, faces: list[FaceFiles], bench: Benchmark) -> Path:
    """A CSV manifest of a release folder, with our attribute names and Table 12 labels."""
    by_slug = {v.slug: v for v in bench.variations}
    rows = []
    for n, f in enumerate(faces):
        fid = f"person{n:02d}"
        base = f.folder / f"{f.stem}.png"
        s = f.spec
        rows.append(
            {
                "path": base.relative_to(table.parent).as_posix(),
                "face_id": fid,
                "age": s.age,
                "gender": s.gender,
                "ethnicity": s.ethnicity,
                "body_type": s.body_type,
                "attribute": "",
                "value": "",
                "prompt": s.prompt,
            }
        )
        for slug, img in f.variations.items():
            v = by_slug[slug]
            rows.append(
                {
                    "path": img.relative_to(table.parent).as_posix(),
                    "face_id": fid,
                    "age": "",
                    "gender": "",
                    "ethnicity": "",
                    "body_type": "",
                    "attribute": v.attribute,
                    "value": v.label,
                    "prompt": "",
                }
            )
    table.parent.mkdir(parents=True, exist_ok=True)
    with table.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return table


def import_params(*overrides: str) -> dict[str, Any]:
    """conf/ composed with generator=import (source data/import/release) and ``overrides``."""
    return compose(["generator=import", "generator.source=data/import/release", *overrides])


def output(project: Path, name: str, params: dict[str, Any] | None = None) -> Path:
    """The stage output folder ``paths.<name>`` of ``params`` (default :func:`import_params`,
    the default protocol's job: ``data/<protocol>/<name>``) under ``project``."""
    return project / (params or import_params())["paths"][name]
