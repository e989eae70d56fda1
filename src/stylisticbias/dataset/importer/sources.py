"""Read an existing image set into :class:`Entry` records: the paper's release layout or a table.

**Release layout** (the paper's generation code, ``timo-cavelius/StylisticBias``): one folder per
base face, named after the base image's stem::

    <source>/<stem>/<stem>.png                      base face
    <source>/<stem>/<stem>_metadata.json            {"image_path", "characteristics": {"age",
                                                      "gender", "ethnicity", "body_type"},
                                                      "prompt", "timestamp"}
    <source>/<stem>/<stem>_face_<k>_<YYYYmmdd_HHMMSS>_<id8>.png   a face edit (Fig. 10)
    <source>/<stem>/<stem>_body_<k>_<YYYYmmdd_HHMMSS>_<id8>.png   a full-body fashion edit
    <image stem>_metadata.json                      {"image_path", "characteristics": {"base":
                                                      "<stem>.png", "variation": {key: value},
                                                      "prompt"}, "prompt", "timestamp"}

The image beside a metadata file is found by its stem (``image_path`` holds the generating
machine's path, tried by file name only).

**Table layout**: a CSV or Parquet file, one row per image, columns ``path`` (relative to the
table's folder, or absolute), ``face_id``, ``age``, ``gender``, ``ethnicity``, ``body_type``
(on base rows; variation rows take their face's), ``attribute`` and ``value`` (both empty on a
base face's row), optional ``prompt``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES
from stylisticbias.dataset.regular_files import read_regular
from stylisticbias.errors import StylisticBiasError

IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".webp")
TABLE_EXTS = (".csv", ".parquet", ".pq")
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: The largest ``_metadata.json`` read (the paper's are under 1 KiB); read as a regular file only.
MAX_METADATA_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Problem:
    """Why a row cannot enter the dataset: the check's name and a one-line message."""

    check: str
    message: str


@dataclass(frozen=True)
class Entry:
    """One image of the source, as the source spells it.

    ``where`` names the file (metadata JSON or table row) in messages; ``attribute``/``value``
    are None on a base face; ``demographics`` is set on base faces only.
    """

    where: str
    image: Path
    face_id: str
    attribute: str | None
    value: str | None
    demographics: dict[str, str] | None
    prompt: str
    problem: Problem | None = None
    group: str = ""  # the source photo of a counterfactual edit (layout counterfactual)
    edit: str = ""  # the edit's name in its source folder (layout counterfactual)

    @property
    def label(self) -> str:
        """Short name for lists: ``set.csv line 7`` for a table row, else the image's name."""
        if self.where.endswith(")") and " (" in self.where:
            return Path(self.where.split(" (", 1)[0]).name
        return self.image.name

    @property
    def is_base(self) -> bool:
        """True for a base face."""
        return self.attribute is None and self.value is None


def read_entries(layout: str, source: Path) -> list[Entry]:
    """All entries of ``source`` in ``layout`` (``release`` or ``table``)."""
    return read_release(source) if layout == "release" else read_table(source)


# --------------------------------------------------------------------------- release layout
def _check_id(face_id: str, where: str) -> str:
    if not SAFE_ID.match(face_id):
        raise StylisticBiasError(
            f"{where}: face id {face_id!r} is not usable as a file name (letters, digits, '.', "
            "'_', '-'; starting with a letter or digit)"
        )
    return face_id


def _load_json(path: Path) -> tuple[dict | None, Problem | None]:
    try:
        data = json.loads(read_regular(path, str(path), MAX_METADATA_BYTES).decode("utf-8"))
    except StylisticBiasError as exc:  # not a regular file, or too large: never opened
        why = str(exc).removeprefix(f"{path}: ")
        return None, Problem("unreadable_metadata", f"{path}: unreadable metadata JSON ({why})")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, Problem("unreadable_metadata", f"{path}: unreadable metadata JSON ({exc})")
    if not isinstance(data, dict) or not isinstance(data.get("characteristics"), dict):
        return None, Problem(
            "unreadable_metadata", f"{path}: metadata has no 'characteristics' mapping"
        )
    return data, None


def _image_beside(meta: Path, data: dict | None) -> Path:
    stem = meta.name[: -len("_metadata.json")]
    for ext in IMAGE_EXTS:
        cand = meta.with_name(stem + ext)
        if cand.exists():
            return cand
    if data and data.get("image_path"):
        cand = meta.with_name(Path(str(data["image_path"]).replace("\\", "/")).name)
        if cand.exists():
            return cand
    return meta.with_name(stem + ".png")


def _is_variation_meta(name: str, stem: str) -> bool:
    return name != f"{stem}_metadata.json" and (
        name.startswith(f"{stem}_face_") or name.startswith(f"{stem}_body_")
    )


def read_release(source: Path) -> list[Entry]:
    """Entries of a folder in the paper's release layout (see the module docstring)."""
    if not source.is_dir():
        raise StylisticBiasError(
            f"{source}: not a folder; generator.source must be the release's root folder (one "
            "sub-folder per base face)"
        )
    folders = sorted(p for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not folders:
        raise StylisticBiasError(
            f"{source}: no face folders; the release layout has one folder per base face, "
            "named after the base image's stem"
        )
    entries: list[Entry] = []
    for folder in folders:
        stem = _check_id(folder.name, str(folder))
        base_meta = folder / f"{stem}_metadata.json"
        claimed: set[Path] = set()
        base_image: Path | None = None
        if base_meta.exists():
            data, problem = _load_json(base_meta)
            base_image = _image_beside(base_meta, data)
            claimed |= {base_meta, base_image}
            ch = (data or {}).get("characteristics", {})
            demo = {a: str(ch[a]) for a in DEMOGRAPHIC_AXES if a in ch}
            lacking = [a for a in DEMOGRAPHIC_AXES if a not in demo]
            if problem is None and lacking:
                problem = Problem(
                    "unreadable_metadata",
                    f"{base_meta}: characteristics lack {', '.join(lacking)}",
                )
            entries.append(
                Entry(
                    str(base_meta),
                    base_image,
                    stem,
                    None,
                    None,
                    demo,
                    str((data or {}).get("prompt") or ""),
                    problem,
                )
            )
        for meta in sorted(folder.glob("*_metadata.json")):
            if not _is_variation_meta(meta.name, stem):
                continue
            data, problem = _load_json(meta)
            image = _image_beside(meta, data)
            claimed |= {meta, image}
            ch = (data or {}).get("characteristics", {})
            var = ch.get("variation")
            attr = value = ""
            if problem is None:
                if not isinstance(var, dict) or not var:
                    problem = Problem(
                        "unreadable_metadata", f"{meta}: characteristics.variation is empty"
                    )
                elif len(var) > 1:
                    pairs = ", ".join(f"{k}={v!r}" for k, v in var.items())
                    problem = Problem(
                        "two_values", f"{meta}: two values in one variation ({pairs})"
                    )
                else:
                    attr, value = (str(x) for x in next(iter(var.items())))
            if problem is None:
                base_name = str(ch.get("base") or "")
                if base_image is None or not base_meta.exists():
                    problem = Problem(
                        "base_missing",
                        f"{meta}: variation whose base is missing (no {base_meta.name} in "
                        f"{folder})",
                    )
                elif base_name and Path(base_name).stem != stem:
                    problem = Problem(
                        "base_missing",
                        f"{meta}: variation whose base is missing (its base {base_name!r} is "
                        f"not this folder's base face {base_image.name})",
                    )
            entries.append(
                Entry(
                    str(meta),
                    image,
                    stem,
                    attr or "?",
                    value or "?",
                    None,
                    str(ch.get("prompt") or (data or {}).get("prompt") or ""),
                    problem,
                )
            )
        for img in sorted(folder.iterdir()):
            if img.suffix.lower() in IMAGE_EXTS and img not in claimed:
                entries.append(
                    Entry(
                        str(img),
                        img,
                        stem,
                        "?",
                        "?",
                        None,
                        "",
                        Problem("no_metadata", f"{img}: image without a _metadata.json"),
                    )
                )
    return entries


# --------------------------------------------------------------------------- table layout
TABLE_COLUMNS = ("path", "face_id", "attribute", "value", *DEMOGRAPHIC_AXES)


def _cell(v: object) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return ""
    return str(v).strip()


def read_table(source: Path) -> list[Entry]:
    """Entries of a CSV/Parquet manifest (see the module docstring)."""
    if not source.is_file():
        raise StylisticBiasError(
            f"{source}: not found; generator.source must be the CSV or Parquet manifest "
            "(layout table)"
        )
    ext = source.suffix.lower()
    if ext not in TABLE_EXTS:
        raise StylisticBiasError(f"{source}: unknown table type {ext!r}; valid: {TABLE_EXTS}")
    try:
        if ext == ".csv":
            df = pd.read_csv(source, dtype=str, keep_default_na=False)
            line = 2  # header is line 1
        else:
            df = pd.read_parquet(source)
            line = 0
    except Exception as exc:  # pandas/pyarrow raise many types
        raise StylisticBiasError(
            f"{source}: not a readable table ({type(exc).__name__}: {exc})"
        ) from None
    missing = [c for c in TABLE_COLUMNS if c not in df.columns]
    if missing:
        raise StylisticBiasError(
            f"{source}: missing column(s) {', '.join(missing)}; a manifest needs "
            f"{', '.join(TABLE_COLUMNS)} (attribute/value empty on base faces), prompt optional"
        )
    unit = "line" if ext == ".csv" else "row"
    entries: list[Entry] = []
    for i, rec in enumerate(df.to_dict("records")):
        where = f"{source} {unit} {i + line}"
        path = _cell(rec["path"])
        image = Path(path) if Path(path).is_absolute() else source.parent / path
        face_id = _check_id(_cell(rec["face_id"]), where)
        attr, value = _cell(rec["attribute"]), _cell(rec["value"])
        prompt = _cell(rec.get("prompt"))
        where = f"{where} ({path})"
        if not path:
            entries.append(
                Entry(
                    where,
                    source.parent,
                    face_id,
                    attr or None,
                    value or None,
                    None,
                    prompt,
                    Problem("missing_image", f"{where}: empty path"),
                )
            )
            continue
        if not attr and not value:
            demo = {a: _cell(rec[a]) for a in DEMOGRAPHIC_AXES}
            entries.append(Entry(where, image, face_id, None, None, demo, prompt))
        elif not attr or not value:
            entries.append(
                Entry(
                    where,
                    image,
                    face_id,
                    attr or "?",
                    value or "?",
                    None,
                    prompt,
                    Problem(
                        "unreadable_metadata",
                        f"{where}: attribute and value must both be set (a "
                        "variation) or both empty (a base face)",
                    ),
                )
            )
        else:
            entries.append(Entry(where, image, face_id, attr, value, None, prompt))
    _flag_shared_images(entries)
    return entries


def _flag_shared_images(entries: list[Entry]) -> None:
    """An image listed for two values is a variation with two values: flag every such row."""
    by_image: dict[Path, list[int]] = {}
    for i, e in enumerate(entries):
        if not e.is_base and e.problem is None:
            by_image.setdefault(e.image.resolve(), []).append(i)
    for idx in by_image.values():
        if len({(entries[i].attribute, entries[i].value) for i in idx}) < 2:
            continue  # one value listed twice: the duplicate check reports it
        pairs = ", ".join(
            f"{entries[i].attribute}={entries[i].value!r} on {entries[i].label}" for i in idx
        )
        for i in idx:
            e = entries[i]
            entries[i] = _with(
                e, Problem("two_values", f"{e.where}: two values in one variation ({pairs})")
            )


def _with(e: Entry, problem: Problem) -> Entry:
    return replace(e, problem=problem)


def with_problem(e: Entry, problem: Problem) -> Entry:
    """``e`` with ``problem`` (the first problem found is kept)."""
    return e if e.problem is not None else _with(e, problem)


def iter_ok(entries: Iterable[Entry]) -> Iterable[Entry]:
    """Entries without a problem."""
    return (e for e in entries if e.problem is None)
