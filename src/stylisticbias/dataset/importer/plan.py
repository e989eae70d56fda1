"""Map source entries to the benchmark and run the import checks that need no pixels.

Checks (each a one-line :class:`~stylisticbias.dataset.importer.sources.Problem` naming the
file): unreadable metadata, an image without metadata, two values in one variation, a variation
whose base is missing, a face with demographics outside the grid, a value outside the face's
gender scope, duplicate faces and duplicate (face, attribute, value), values excluded by the
alias table, an image path that leaves the manifest's folder (or, in place, the data root:
:mod:`~stylisticbias.dataset.importer.safety`). Unmapped spellings stop the import whatever the
policy (:meth:`Vocabulary.raise_unmapped`). Image checks (missing / unreadable / corrupt) are in
:mod:`stylisticbias.dataset.importer.images`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, VariationValue
from stylisticbias.dataset.importer.edit_sets import read_edit_sets, set_problems
from stylisticbias.dataset.importer.pairs import read_pairs
from stylisticbias.dataset.importer.safety import ignored_files, manifest_folder, path_problem
from stylisticbias.dataset.importer.settings import ImportSettings
from stylisticbias.dataset.importer.sources import Entry, Problem, read_entries, with_problem
from stylisticbias.dataset.importer.vocabulary import EXCLUDED, Vocabulary


@dataclass(frozen=True)
class Planned:
    """An entry in the benchmark's vocabulary (``variation`` None on a base face)."""

    entry: Entry
    demographics: dict[str, str]
    variation: VariationValue | None
    problem: Problem | None

    @property
    def face_id(self) -> str:
        """The face id (base folder stem or the table's ``face_id``)."""
        return self.entry.face_id

    def failed(self, problem: Problem) -> Planned:
        """This row with ``problem`` (the first problem found is kept)."""
        if self.problem is not None:
            return self
        return Planned(self.entry, self.demographics, self.variation, problem)


@dataclass(frozen=True)
class ImportPlan:
    """The base faces and variations of a source, mapped and checked (no pixels read yet)."""

    faces: tuple[Planned, ...]
    variations: tuple[Planned, ...]
    ignored: tuple[str, ...] = ()  # files under the source no row claims (relative paths)


def plan_import(
    settings: ImportSettings, benchmark: Benchmark, source: Path, data_root: Path
) -> ImportPlan:
    """Read ``source`` and return every entry mapped to the benchmark, with its problem.

    No image is opened here; an image path that breaks the path rule is an ``unsafe_path``
    problem, so the image stage never opens it either.
    """
    if settings.layout == "pairs":
        entries = read_pairs(source, benchmark)
    elif settings.layout == "counterfactual":
        entries = read_edit_sets(source, benchmark, settings.pattern)
    else:
        entries = read_entries(settings.layout, source)
    folder = manifest_folder(settings.layout, source)
    entries = [
        with_problem(e, bad)
        if (bad := path_problem(e, folder, settings.materialize, data_root))
        else e
        for e in entries
    ]
    vocab = Vocabulary(benchmark, settings.aliases)
    faces = [_map_face(e, vocab, benchmark) for e in entries if e.is_base]
    variations = [_map_variation(e, vocab) for e in entries if not e.is_base]
    vocab.raise_unmapped()
    faces = _flag_duplicates(faces, lambda p: p.face_id, "duplicate face")
    if settings.layout == "counterfactual":
        sets = set_problems(
            [(p.entry, p.demographics, p.problem is None) for p in faces], benchmark.counterfactual
        )
        faces = [p.failed(sets[i]) if i in sets else p for i, p in enumerate(faces)]
    ok_faces = {p.face_id: p for p in faces if p.problem is None}
    all_faces = {p.face_id: p for p in faces}
    checked = []
    for p in variations:
        base = ok_faces.get(p.face_id)
        if p.problem is None and base is None:
            if p.face_id in all_faces:
                why = all_faces[p.face_id].problem
                p = p.failed(
                    Problem(
                        "base_skipped",
                        f"{p.entry.where}: its base face {p.face_id} was skipped "
                        f"({why.check if why else '?'})",
                    )
                )
            else:
                p = p.failed(
                    Problem(
                        "base_missing",
                        f"{p.entry.where}: variation whose base is missing (no base face "
                        f"{p.face_id!r} in the source)",
                    )
                )
        if base is not None:
            p = Planned(p.entry, base.demographics, p.variation, p.problem)
            v = p.variation
            if (
                p.problem is None
                and v is not None
                and not v.applies_to(base.demographics["gender"])
            ):
                p = p.failed(
                    Problem(
                        "outside_scope",
                        f"{p.entry.where}: {v.attribute} / {v.value} is not in the benchmark for a "
                        f"{base.demographics['gender']} face (gender scope {v.gender_scope}"
                        + (
                            f", excluded for {', '.join(v.exclude_gender)}"
                            if v.exclude_gender
                            else ""
                        )
                        + ")",
                    )
                )
        checked.append(p)
    checked = _flag_duplicates(
        checked,
        lambda p: (p.face_id, p.variation.attribute, p.variation.value) if p.variation else None,
        "duplicate (face, attribute, value)",
    )
    ignored = ignored_files(settings.layout, source, entries)
    return ImportPlan(tuple(faces), tuple(checked), tuple(ignored))


def _map_face(e: Entry, vocab: Vocabulary, benchmark: Benchmark) -> Planned:
    demo: dict[str, str] = {}
    problem = e.problem
    for axis in DEMOGRAPHIC_AXES:
        raw = (e.demographics or {}).get(axis, "")
        got = vocab.demographic(axis, raw)
        if got is EXCLUDED:
            problem = problem or Problem(
                "excluded", f"{e.where}: {axis} {raw!r} is excluded by the alias table"
            )
            demo[axis] = raw
            continue
        demo[axis] = str(got)
        grid = benchmark.demographics[axis]
        if problem is None and demo[axis] not in grid:
            problem = Problem(
                "outside_grid",
                f"{e.where}: face {e.face_id} has {axis} {raw!r}, outside the demographic grid; "
                f"valid: {', '.join(grid)} (or map it in generator.aliases)",
            )
    return Planned(e, demo, None, problem)


def _map_variation(e: Entry, vocab: Vocabulary) -> Planned:
    if e.problem is not None:
        return Planned(e, {}, None, e.problem)
    attr = vocab.attribute(str(e.attribute), e.where)
    if attr is EXCLUDED:
        return Planned(
            e,
            {},
            None,
            Problem(
                "excluded", f"{e.where}: attribute {e.attribute!r} is excluded by the alias table"
            ),
        )
    if attr is None:
        return Planned(e, {}, None, Problem("unmapped", f"{e.where}: unmapped attribute"))
    value = vocab.value(str(attr), str(e.value), e.where)
    if value is EXCLUDED:
        return Planned(
            e,
            {},
            None,
            Problem(
                "excluded", f"{e.where}: {attr} value {e.value!r} is excluded by the alias table"
            ),
        )
    if value is None:
        return Planned(e, {}, None, Problem("unmapped", f"{e.where}: unmapped value"))
    assert isinstance(value, VariationValue)
    return Planned(e, {}, value, None)


def _flag_duplicates(rows: list[Planned], key, what: str) -> list[Planned]:
    """Every row of a key held by more than one problem-free row gets a duplicate problem."""
    seen: dict[object, list[int]] = {}
    for i, p in enumerate(rows):
        k = key(p)
        if p.problem is None and k is not None:
            seen.setdefault(k, []).append(i)
    out = list(rows)
    for k, idx in seen.items():
        if len(idx) < 2:
            continue
        files = ", ".join(rows[i].entry.label for i in idx)
        label = k if isinstance(k, str) else " / ".join(map(str, k))
        for i in idx:
            out[i] = rows[i].failed(
                Problem(
                    "duplicate",
                    f"{rows[i].entry.where}: {what} {label} ({len(idx)} rows: {files})",
                )
            )
    return out


__all__ = ["ImportPlan", "Planned", "plan_import", "with_problem"]
