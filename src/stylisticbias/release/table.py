"""The release's per-image table: one row per image (base faces and variations).

Built from the ``faces`` and ``variations`` manifests (DVC outputs), in their order (faces
first, then variations by face and value). Every column is typed (:data:`COLUMNS`): the same
types go into ``croissant.json``'s record set, so the Croissant record loader and the Parquet
reader see the same values.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias import schemas
from stylisticbias.errors import StylisticBiasError

#: Croissant data types of the table's value kinds
TEXT, INTEGER, BOOLEAN = "sc:Text", "sc:Integer", "sc:Boolean"


@dataclass(frozen=True)
class Column:
    """One column of the per-image table: name, Croissant data type, description."""

    name: str
    data_type: str
    description: str


#: the per-image table's columns, in order
COLUMNS: tuple[Column, ...] = (
    Column("image_id", TEXT, "Unique image id (base faces: <face_id>-base)."),
    Column("face_id", TEXT, "The base identity the image shows."),
    Column("is_base", BOOLEAN, "True for a base face, false for a single-attribute edit."),
    Column("age", TEXT, "Age group of the identity (as designed, not inferred)."),
    Column("gender", TEXT, "Gender of the identity (as designed, not inferred)."),
    Column("ethnicity", TEXT, "Ethnicity of the identity (as designed, not inferred)."),
    Column("body_type", TEXT, "Body type of the identity (as designed, not inferred)."),
    Column("category", TEXT, "Variation category (empty on base faces)."),
    Column("attribute", TEXT, "Edited attribute (empty on base faces)."),
    Column("value", TEXT, "Value of the edited attribute (empty on base faces)."),
    Column("framing", TEXT, "face (head and shoulders) or full_body."),
    Column("evaluated", BOOLEAN, "Whether the benchmark's judges see the image (whitelist)."),
    Column("generator", TEXT, "The generator (or import) that made the image."),
    Column("generator_settings", TEXT, "The generator's settings as JSON (sorted keys)."),
    Column("prompt", TEXT, "The generation or edit prompt."),
    Column("seed", INTEGER, "The generation seed."),
    Column("status", TEXT, "QA: ok, refused, blocked or error."),
    Column("reason", TEXT, "QA: why the image is not ok (empty when ok)."),
    Column("file_name", TEXT, "Path of the image inside the release (empty when not ok)."),
    Column("sha256", TEXT, "SHA-256 of the image file (empty when not ok)."),
    Column("size_bytes", INTEGER, "Size of the image file in bytes (0 when not ok)."),
    Column("width", INTEGER, "Image width in pixels (0 when not ok)."),
    Column("height", INTEGER, "Image height in pixels (0 when not ok)."),
)

#: the text columns that are empty (not null) where they do not apply
_EMPTY_TEXT = ("category", "attribute", "value", "reason", "file_name", "sha256")
_ZERO_INT = ("size_bytes", "width", "height")


def generator_settings(generator: Mapping[str, Any]) -> str:
    """The ``generator`` section as canonical JSON (sorted keys, no secrets: the specs hold only
    the *names* of key variables)."""
    return json.dumps(dict(generator), sort_keys=True, default=str, separators=(",", ":"))


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _manifest(path: Path, schema: Any) -> pd.DataFrame:
    if not path.is_file():
        raise StylisticBiasError(
            f"{path}: manifest not found; run `dvc repro faces variations` first (the release "
            "reads the DVC outputs)"
        )
    return schemas.read_table(path, schema)


def image_rows(
    faces_dir: Path, variations_dir: Path, generator: Mapping[str, Any]
) -> tuple[pd.DataFrame, list[tuple[Path, str]]]:
    """The per-image table and the (source file, release path) of every ``ok`` image.

    Each image's bytes are checked against the manifest's sha256 before it is listed: a file
    that changed since its stage ran stops the release with one line naming it.
    """
    faces = _manifest(faces_dir / "faces.parquet", schemas.FACES)
    var = _manifest(variations_dir / "variations.parquet", schemas.VARIATIONS)
    settings = generator_settings(generator)
    frames = []
    files: list[tuple[Path, str]] = []
    for df, base_dir, sub, is_base in (
        (faces, faces_dir, "faces", True),
        (var, variations_dir, "variations", False),
    ):
        out = pd.DataFrame(
            {
                "image_id": df["image_id"],
                "face_id": df["face_id"],
                "is_base": is_base,
                **{c: df[c] for c in ("age", "gender", "ethnicity", "body_type")},
                **{c: (df.get(c, None)) for c in ("category", "attribute", "value")},
                "framing": df.get("framing", "face"),
                "evaluated": df["evaluated"],
                "generator": df["generator"],
                "generator_settings": settings,
                "prompt": df["prompt"],
                "seed": df["seed"],
                "status": df["status"],
                "reason": df["reason"],
            }
        )
        names, digests, sizes = [], [], []
        for row in df.itertuples(index=False):
            if row.status != "ok" or not isinstance(row.path, str):
                names.append(None), digests.append(None), sizes.append(0)
                continue
            src = (base_dir / row.path).resolve()
            if not src.is_file():
                raise StylisticBiasError(
                    f"{base_dir / row.path}: image of {row.image_id} is missing; re-run "
                    f"`dvc repro -f {sub}`"
                )
            digest = sha256_file(src)
            if digest != row.sha256:
                raise StylisticBiasError(
                    f"{base_dir / row.path}: sha256 differs from the {sub} manifest "
                    f"({digest[:12]}... vs {str(row.sha256)[:12]}...); the image changed since "
                    f"the stage ran: re-run `dvc repro {sub}`"
                )
            parts = Path(row.path).parts
            if parts[0] == "images" and ".." not in parts:  # keep the stage's layout
                rel = "/".join(("images", sub, *parts[1:]))
            else:  # an imported set referenced in place: one file per image id
                rel = f"images/{sub}/{row.image_id}{src.suffix}"
            names.append(rel), digests.append(digest), sizes.append(src.stat().st_size)
            files.append((src, rel))
        out["file_name"], out["sha256"], out["size_bytes"] = names, digests, sizes
        out["width"], out["height"] = df["width"], df["height"]
        frames.append(out)
    table = pd.concat(frames, ignore_index=True)
    return normalise(table), files


def normalise(table: pd.DataFrame) -> pd.DataFrame:
    """Column order and types of :data:`COLUMNS`; empty strings / zeros where nothing applies
    (Croissant has no notion of a null, so none is written)."""
    table = table.copy()
    for c in _EMPTY_TEXT:
        table[c] = table[c].where(table[c].notna(), "").astype(str)
    for c in _ZERO_INT:
        table[c] = pd.to_numeric(table[c]).fillna(0).astype("int64")
    for col in COLUMNS:
        if col.data_type == TEXT:
            table[col.name] = table[col.name].astype(str)
        elif col.data_type == INTEGER:
            table[col.name] = table[col.name].astype("int64")
        else:
            table[col.name] = table[col.name].astype(bool)
    dup = table["image_id"].duplicated()
    if dup.any():
        raise StylisticBiasError(
            f"image id {table.loc[dup, 'image_id'].iloc[0]!r} is in both the faces and the "
            "variations manifest"
        )
    return table[[c.name for c in COLUMNS]]
