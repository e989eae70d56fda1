"""The ``pairs`` layout: one original and one varied image per person, and a label table.

For protocols that contrast each person's image with one variation of it (``statistics.variation``
of the protocol, e.g. Beauty and the Bias: original vs beauty-filtered)::

    <source>/original/<id>.<ext>       the base image (folder: statistics.variation.base_label)
    <source>/beautified/<id>.<ext>     its one variation (folder: statistics.variation.label)
    <source>/labels.csv                id, then one column per demographic axis, named as the
                                       faces manifest (gender, age, ethnicity) or as the
                                       protocol's statistics.axes (race); an axis with one value
                                       in the protocol (e.g. body_type: [not labelled]) may be
                                       left out

The original becomes the base face, the varied image its one variation, so the ``faces`` and
``variations`` manifests are those of any other image set. Nothing is dropped silently: a person
with one image of the two, an image in one folder only and an image without a labels row are
each a problem with a one-line message (``generator.on_error`` decides whether the first stops
the import or the rows are listed as skipped); a label outside the protocol's values is the
importer's ``outside_grid`` problem.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.dataset.importer.sources import IMAGE_EXTS, Entry, Problem, _check_id
from stylisticbias.errors import StylisticBiasError

LABELS = "labels.csv"


def _images(folder: Path) -> dict[str, Path]:
    """``{id: path}`` of the images directly in ``folder`` (two files for one id: an error)."""
    out: dict[str, Path] = {}
    if not folder.is_dir():
        return out
    for p in sorted(folder.iterdir()):
        # any kind of file under an image's name (a FIFO, a device link, a folder): the
        # image check refuses it in one line, unopened (dataset.regular_files)
        if p.suffix.lower() in IMAGE_EXTS:
            if p.stem in out:
                raise StylisticBiasError(
                    f"{p}: a second image for id {p.stem!r} (also {out[p.stem].name}); keep one"
                )
            out[p.stem] = p
    return out


def _label_columns(df: pd.DataFrame, benchmark: Benchmark, where: Path) -> dict[str, str]:
    """Demographic axis -> its column in labels.csv (by axis name or statistics.axes name)."""
    display = {col: name for name, col in benchmark.statistics.axes}
    cols: dict[str, str] = {}
    for axis in DEMOGRAPHIC_AXES:
        for name in (axis, display.get(axis)):
            if name and name in df.columns:
                cols[axis] = name
                break
        else:
            if len(benchmark.demographics[axis]) > 1:
                names = " or ".join(n for n in (axis, display.get(axis)) if n)
                raise StylisticBiasError(
                    f"{where}: missing column {names}; labels.csv needs id and "
                    + ", ".join(
                        display.get(a, a)
                        for a in DEMOGRAPHIC_AXES
                        if len(benchmark.demographics[a]) > 1
                    )
                )
    return cols


def read_pairs(source: Path, benchmark: Benchmark) -> list[Entry]:
    """Entries of a pair folder (see the module docstring): base, then variation, per person."""
    contrast = benchmark.statistics.variation
    if contrast is None:
        raise StylisticBiasError(
            f"{benchmark.source}: layout pairs needs the protocol's statistics.variation "
            "(which variation the second folder holds)"
        )
    labels_path = source / LABELS
    if not source.is_dir() or not labels_path.is_file():
        raise StylisticBiasError(
            f"{source}: layout pairs needs {contrast.base_label}/, {contrast.label}/ and "
            f"{LABELS} in this folder"
        )
    try:
        df = pd.read_csv(labels_path, dtype=str, keep_default_na=False)
    except Exception as exc:  # pandas raises many types
        raise StylisticBiasError(f"{labels_path}: not a readable CSV ({exc})") from None
    id_col = next((c for c in ("id", "face_id") if c in df.columns), None)
    if id_col is None:
        raise StylisticBiasError(f"{labels_path}: missing column id (the image file stem)")
    cols = _label_columns(df, benchmark, labels_path)
    base_dir, var_dir = source / contrast.base_label, source / contrast.label
    originals, varied = _images(base_dir), _images(var_dir)
    entries: list[Entry] = []
    seen: set[str] = set()
    for i, rec in enumerate(df.to_dict("records")):
        where = f"{labels_path} line {i + 2}"
        face_id = _check_id(str(rec[id_col]).strip(), where)
        seen.add(face_id)
        demo = {
            a: str(rec[cols[a]]).strip() if a in cols else benchmark.demographics[a][0]
            for a in DEMOGRAPHIC_AXES
        }
        base_img, var_img = originals.get(face_id), varied.get(face_id)
        for kind, img, folder in (
            ("base", base_img, base_dir),
            ("variation", var_img, var_dir),
        ):
            problem = None
            if img is None:
                problem = Problem(
                    "missing_half",
                    f"{where} ({face_id}): no {folder.name}/{face_id}.* image; each person "
                    f"needs {contrast.base_label}/{face_id}.* and {contrast.label}/{face_id}.*",
                )
            path = img or folder / face_id
            if kind == "base":
                entries.append(
                    Entry(f"{where} ({face_id})", path, face_id, None, None, demo, "", problem)
                )
            else:
                entries.append(
                    Entry(
                        f"{where} ({face_id}, {contrast.label})",
                        path,
                        face_id,
                        contrast.attribute,
                        contrast.value,
                        None,
                        "",
                        problem,
                    )
                )
    for folder, images, other in (
        (base_dir, originals, varied),
        (var_dir, varied, originals),
    ):
        for face_id, img in images.items():
            if face_id in seen:
                continue
            if face_id not in other:
                problem = Problem(
                    "one_folder_only",
                    f"{img}: image in {folder.name}/ only (no {face_id}.* in the other folder "
                    f"and no {LABELS} row)",
                )
            else:
                problem = Problem(
                    "no_labels", f"{img}: no {LABELS} row for id {face_id!r} (its labels)"
                )
            is_base = folder == base_dir
            entries.append(
                Entry(
                    str(img),
                    img,
                    face_id,
                    None if is_base else contrast.attribute,
                    None if is_base else contrast.value,
                    None,
                    "",
                    problem,
                )
            )
    return entries
