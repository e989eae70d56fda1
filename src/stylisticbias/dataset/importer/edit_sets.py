"""The ``counterfactual`` layout: a folder of edits per source photo (REFLECT's FOCUS images).

For protocols whose images are counterfactual sets (``counterfactual.axes``: every source photo
edited to each cell of the axes, e.g. race x gender)::

    <source>/<source_id>/<edit>.<ext>     one edit of the source photo <source_id>
    <source>/edits.csv | edits.parquet     one row per edit: source_id, edit (the file stem),
                                           then one column per edited axis, named as the faces
                                           manifest (gender, ethnicity), ``race`` or as the
                                           protocol's statistics.axes; an axis with one value in the
                                           protocol may be left out (a column for it is read)

or, instead of the manifest, ``generator.pattern`` declares how an edit's file stem spells its
demographics, e.g. ``{ethnicity}_{gender}`` (``asian_female.png``); every axis with more than
one value must be a field of the pattern. The source id is the folder's name and becomes the
sampling unit of every task table (``counterfactuals.parquet`` of the faces stage,
:mod:`stylisticbias.dataset.counterfactual_sets`); each edit is one face of ``faces.parquet``
(face id ``<source_id>-<edit>``, characters other than letters, digits, ``.``, ``_``, ``-``
replaced by ``-``).

Nothing is dropped silently: an image without a manifest row, a row without an image, a stem
that does not match the pattern, two edits of one cell in one source and a source with one
edit only are each a problem with a one-line message (``generator.on_error`` decides whether
the first stops the import); a value outside the protocol's groups is the importer's
``outside_grid`` problem naming the valid ones; a missing manifest column stops the import.
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.dataset.importer.sources import IMAGE_EXTS, Entry, Problem, _check_id
from stylisticbias.errors import StylisticBiasError

MANIFESTS = ("edits.csv", "edits.parquet")
#: the manifest's key columns (besides one per edited axis)
KEYS = ("source_id", "edit")
#: the other name a manifest column of an axis may have (besides the protocol's statistics.axes)
SPELLINGS = {"ethnicity": "race"}


def manifest_of(source: Path) -> Path | None:
    """The edits manifest of a counterfactual folder (None when it has none)."""
    return next((source / m for m in MANIFESTS if (source / m).is_file()), None)


def _needed(benchmark: Benchmark) -> list[str]:
    return [a for a in DEMOGRAPHIC_AXES if len(benchmark.demographics[a]) > 1]


def _axis_columns(columns: Sequence[str], benchmark: Benchmark, where: Path) -> dict[str, str]:
    """Demographic axis -> its manifest column (by axis name or statistics.axes name)."""
    display = {**SPELLINGS, **{col: name for name, col in benchmark.statistics.axes}}
    cols: dict[str, str] = {}
    for axis in DEMOGRAPHIC_AXES:
        name = next((n for n in (axis, display.get(axis)) if n and n in columns), None)
        if name is not None:
            cols[axis] = name
    missing = [k for k in KEYS if k not in columns]
    missing += [
        " or ".join(n for n in (a, display.get(a)) if n)
        for a in _needed(benchmark)
        if a not in cols
    ]
    if missing:
        need = [*KEYS, *(display.get(a, a) for a in _needed(benchmark))]
        raise StylisticBiasError(
            f"{where}: missing column(s) {', '.join(missing)}; the edits manifest needs "
            f"{', '.join(need)} (one row per edit)"
        )
    return cols


def _images(folder: Path) -> dict[str, Path]:
    """``{stem: path}`` of the images directly in ``folder`` (two files for one stem: an error)."""
    out: dict[str, Path] = {}
    for p in sorted(folder.iterdir()):
        # any kind of file under an image's name (a FIFO, a device link, a folder): the
        # image check refuses it in one line, unopened (dataset.regular_files)
        if p.suffix.lower() in IMAGE_EXTS and not p.name.startswith("."):
            if p.stem in out:
                raise StylisticBiasError(
                    f"{p}: a second image for edit {p.stem!r} (also {out[p.stem].name}); keep one"
                )
            out[p.stem] = p
    return out


def _pattern(pattern: str, benchmark: Benchmark) -> re.Pattern[str]:
    """``generator.pattern`` as a regular expression with one group per axis."""
    where = f"generator.pattern {pattern!r}"
    try:
        parts = list(string.Formatter().parse(pattern))
    except ValueError as exc:
        raise StylisticBiasError(f"{where}: not a valid pattern ({exc})") from None
    fields = [f for _, f, _, _ in parts if f is not None]
    bad = [f for f in fields if f not in DEMOGRAPHIC_AXES]
    if bad or len(set(fields)) != len(fields):
        raise StylisticBiasError(
            f"{where}: fields must be distinct demographic axes; got {', '.join(fields) or 'none'}"
            f"; valid: {', '.join(DEMOGRAPHIC_AXES)}"
        )
    lacking = [a for a in _needed(benchmark) if a not in fields]
    if lacking:
        raise StylisticBiasError(
            f"{where}: no field for {', '.join(lacking)}, which take(s) several values in "
            f"{benchmark.source}; e.g. {'_'.join('{' + a + '}' for a in _needed(benchmark))}"
        )
    rx = "".join(re.escape(lit) + (f"(?P<{f}>.+?)" if f else "") for lit, f, _, _ in parts)
    return re.compile(rx)


def read_edit_sets(source: Path, benchmark: Benchmark, pattern: str | None) -> list[Entry]:
    """Entries of a counterfactual folder (see the module doc): one base-face entry per edit,
    ``group`` = its source id."""
    if not benchmark.counterfactual:
        raise StylisticBiasError(
            f"{benchmark.source}: layout counterfactual needs the protocol's counterfactual.axes "
            "(the axes edited within each source photo)"
        )
    if not source.is_dir():
        raise StylisticBiasError(
            f"{source}: not a folder; layout counterfactual reads <source>/<source_id>/<edit>.* "
            f"with {' or '.join(MANIFESTS)} (or generator.pattern)"
        )
    folders = {
        p.name: p for p in sorted(source.iterdir()) if p.is_dir() and not p.name.startswith(".")
    }
    images = {sid: _images(f) for sid, f in folders.items()}
    manifest = manifest_of(source)
    if pattern:
        entries = _from_pattern(images, _pattern(pattern, benchmark), benchmark, pattern)
    elif manifest is None:
        raise StylisticBiasError(
            f"{source}: layout counterfactual needs {' or '.join(MANIFESTS)} (columns "
            f"{', '.join(KEYS)} and the edited axes) or generator.pattern (e.g. "
            f"{'_'.join('{' + a + '}' for a in _needed(benchmark))})"
        )
    else:
        entries = _from_manifest(manifest, images, folders, benchmark)
    if not entries:
        raise StylisticBiasError(f"{source}: no edits (no <source_id>/<edit>.* image)")
    return entries


def _demographics(values: Mapping[str, str], benchmark: Benchmark) -> dict[str, str]:
    return {
        a: str(values[a]).strip() if a in values else benchmark.demographics[a][0]
        for a in DEMOGRAPHIC_AXES
    }


def _from_pattern(
    images: Mapping[str, Mapping[str, Path]],
    rx: re.Pattern[str],
    benchmark: Benchmark,
    pattern: str,
) -> list[Entry]:
    entries = []
    for sid, by_stem in images.items():
        for stem, img in by_stem.items():
            m = rx.fullmatch(stem)
            why = f"{img}: file name {stem!r} does not match generator.pattern {pattern!r}"
            problem = None if m else Problem("pattern_mismatch", why)
            demo = _demographics(m.groupdict() if m else {}, benchmark)
            entries.append(_entry(str(img), img, sid, stem, demo, problem))
    return entries


def _from_manifest(
    manifest: Path,
    images: Mapping[str, Mapping[str, Path]],
    folders: Mapping[str, Path],
    benchmark: Benchmark,
) -> list[Entry]:
    csv = manifest.suffix == ".csv"
    try:
        df = (
            pd.read_csv(manifest, dtype=str, keep_default_na=False)
            if csv
            else pd.read_parquet(manifest).astype(str)
        )
    except Exception as exc:  # pandas/pyarrow raise many types
        raise StylisticBiasError(f"{manifest}: not a readable table ({exc})") from None
    cols = _axis_columns(list(df.columns), benchmark, manifest)
    entries, listed = [], set()
    for i, rec in enumerate(df.to_dict("records")):
        where = f"{manifest} {'line' if csv else 'row'} {i + 2 if csv else i}"
        sid = _check_id(str(rec["source_id"]).strip(), where)
        stem = str(rec["edit"]).strip()
        listed.add((sid, stem))
        img = images.get(sid, {}).get(stem)
        problem = None
        if img is None:
            problem = Problem(
                "missing_image",
                f"{where} ({sid}/{stem}): no image {sid}/{stem}.* "
                + ("in its folder" if sid in folders else f"(no folder {sid}/)"),
            )
        demo = _demographics({a: rec[c] for a, c in cols.items()}, benchmark)
        path = img or manifest.parent / sid / stem
        entries.append(_entry(f"{where} ({sid}/{stem})", path, sid, stem, demo, problem))
    for sid, by_stem in images.items():
        for stem, img in by_stem.items():
            if (sid, stem) not in listed:
                entries.append(
                    _entry(
                        str(img),
                        img,
                        sid,
                        stem,
                        {},
                        Problem(
                            "no_manifest_row",
                            f"{img}: no {manifest.name} row for source_id {sid!r}, "
                            f"edit {stem!r} (its demographics)",
                        ),
                    )
                )
    return entries


def _entry(
    where: str, image: Path, sid: str, stem: str, demo: dict[str, str], problem: Problem | None
) -> Entry:
    face_id = _check_id(f"{sid}-{re.sub(r'[^A-Za-z0-9._-]+', '-', stem)}", where)
    return Entry(where, image, face_id, None, None, demo, "", problem, group=sid, edit=stem)


def set_problems(
    rows: Sequence[tuple[Entry, dict[str, str], bool]], axes: Sequence[str]
) -> dict[int, Problem]:
    """Problems of whole sets, by row index: two problem-free edits of one cell in one source,
    and a source with one problem-free edit only. ``rows``: (entry, mapped demographics,
    problem-free)."""
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, (e, _, ok) in enumerate(rows):
        if ok:
            by_source[e.group].append(i)
    out: dict[int, Problem] = {}
    for sid, idx in by_source.items():
        cells: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i in idx:
            cells[tuple(rows[i][1][a] for a in axes)].append(i)
        for cell, same in cells.items():
            if len(same) > 1:
                names = ", ".join(rows[i][0].image.name for i in same)
                what = f"source photo {sid} has {len(same)} edits of {' x '.join(cell)} ({names})"
                for i in same:
                    out[i] = Problem("duplicate_edit", f"{rows[i][0].where}: {what}")
        if len(idx) == 1:
            e = rows[idx[0]][0]
            out[idx[0]] = Problem(
                "one_edit",
                f"{e.where}: source photo {sid} has one edit ({e.image.name}); a "
                "counterfactual set needs two or more edits of one photo",
            )
    return out
