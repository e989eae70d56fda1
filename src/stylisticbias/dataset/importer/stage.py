"""The ``faces`` and ``variations`` stages for ``generator: import``.

``faces`` reads the whole source, maps it to the benchmark and runs every metadata check (so a
broken variation stops the import before anything is written), then decodes the base images
and writes ``data/faces`` (``faces.parquet``, ``images/`` unless referenced in place,
``skipped.parquet``, ``import.json``). ``variations`` re-reads the source, checks it against
the written faces (sha256 of every base image), decodes the variation images and writes
``data/variations`` (``variations.parquet``, ``images/``, ``skipped.parquet``,
``coverage.json``, ``gallery.html`` with the coverage report).

With ``generator.on_error=stop`` the import is all or nothing: ``faces`` decodes every image of
**both** stages (base faces and variations) before it swaps ``data/faces`` in, so a corrupt
variation stops the import while the previous ``data/faces`` and ``data/variations`` are still
whole. No image is opened before the path rule
(:mod:`~stylisticbias.dataset.importer.safety`) has accepted its manifest row, nor before
``stat`` has shown it to be a regular file within ``generator.max_image_bytes``
(:mod:`stylisticbias.dataset.regular_files`: a FIFO, a device, a socket or a directory under an
image's name is ``unreadable_image``, a larger file ``too_large``). Files under the
source that no row claims are listed in a log line and in ``import.json`` / ``coverage.json``
(``ignored_files``); images converted to RGB by more than an exact conversion (16-bit grayscale,
alpha: :mod:`stylisticbias.dataset.imaging`) are named in a warning.

Each output directory is built in a temporary sibling (``data/.<name>.tmp``,
:func:`stylisticbias.outputs.atomic_dir`) and swapped in by rename, so a failed or killed import
leaves the previous output whole.

**What DVC tracks.** ``copy``/``hardlink``: the images are files of the stage's output
directory, hashed and cached by DVC. ``reference``: the manifests hold each image's path
relative to the manifest's own folder (e.g. ``../../import/release/face_1/face_1.png`` from
``data/<protocol>/faces``; the source must lie inside the data root) and the sha256 of its
bytes, so the manifest -- a DVC output -- changes whenever an image does; the stages also depend on
``data/import`` (``dvc.yaml``), so a changed source re-runs the import under ``dvc repro``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pandera.pandas as pa
from tqdm import tqdm

from stylisticbias import schemas
from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.config import project_root
from stylisticbias.dataset.counterfactual_sets import COUNTERFACTUALS, SETS_FILE
from stylisticbias.dataset.imaging import BACKGROUND
from stylisticbias.dataset.importer.coverage import coverage, coverage_html, log_coverage
from stylisticbias.dataset.importer.images import (
    ImageInfo,
    converted_png,
    inspect_image,
    place,
    reference_path,
)
from stylisticbias.dataset.importer.plan import ImportPlan, Planned, plan_import
from stylisticbias.dataset.importer.safety import describe_ignored
from stylisticbias.dataset.importer.settings import ImportSettings
from stylisticbias.dataset.importer.sources import Problem
from stylisticbias.errors import StylisticBiasError
from stylisticbias.outputs import atomic_dir, temp_sibling
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

GENERATOR = "import"
IMAGE_CHECKS = (
    "missing_image",
    "unreadable_image",
    "corrupt_image",
    "too_large",
    "unsupported_mode",
)

#: ``skipped.parquet`` beside each manifest: every source row left out, with its reason.
SKIPPED = pa.DataFrameSchema(
    {
        "kind": pa.Column(str, pa.Check.isin(["face", "variation"])),
        "face_id": pa.Column(str),
        "attribute": pa.Column(str, nullable=True),
        "value": pa.Column(str, nullable=True),
        "source": pa.Column(str),
        "check": pa.Column(str),
        "reason": pa.Column(str),
    },
    strict=True,
    coerce=True,
    name="import_skipped",
)


# --------------------------------------------------------------------------- shared helpers
class _Context:
    """Resolved settings, paths and the plan shared by both stages."""

    def __init__(self, config: Config) -> None:
        self.root = project_root()
        self.config = config
        self.settings = ImportSettings.from_spec(config.generator)
        self.benchmark: Benchmark = load_benchmark(config.protocol)
        self.data_root = self.root / config.paths.data
        src = Path(self.settings.source)
        self.source = src if src.is_absolute() else self.root / src
        self.label = _source_label(self.settings, self.source, self.root)
        if self.settings.materialize == "reference" and not _inside(self.source, self.data_root):
            raise StylisticBiasError(
                f"generator.source {self.settings.source!r}: materialize=reference needs the "
                f"images inside the data root ({config.paths.data}/), so that the "
                f"manifests' relative paths stay valid on every machine; put (or `dvc add`) "
                f"the set under {self.settings.watch_dir}/, or use materialize=copy or hardlink"
            )

    def plan(self, stage: str) -> ImportPlan:
        plan = plan_import(self.settings, self.benchmark, self.source, self.data_root)
        if plan.ignored:
            log.warning(
                "import %s: %d file(s) under %s ignored (claimed by no manifest row; listed in "
                "ignored_files of the stage's summary): %s",
                stage,
                len(plan.ignored),
                self.label,
                describe_ignored(list(plan.ignored)),
            )
        return plan

    def warn_unwatched(self) -> None:
        if not _inside(self.source, self.root / self.settings.watch_dir):
            log.warning(
                "import: %s is outside %s/, which the faces/variations stages depend on: DVC "
                "will not notice changes to it (the manifests still pin every image's sha256); "
                "after changing it run `dvc repro -f faces variations`",
                self.label,
                self.settings.watch_dir,
            )

    def rel(self, text: str) -> str:
        """``text`` with the project root stripped from paths (outputs hold no absolute path)."""
        return text.replace(f"{self.root}{os.sep}", "")


def _inside(path: Path, parent: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(os.path.abspath(parent))


def _source_label(s: ImportSettings, source: Path, root: Path) -> str:
    where = (
        Path(os.path.relpath(os.path.abspath(source), os.path.abspath(root))).as_posix()
        if _inside(source, root)
        else f"{source.name} (outside the project)"
    )
    how = {"reference": "referenced in place", "copy": "copied", "hardlink": "hard-linked"}
    layout = {
        "release": "the paper's release layout",
        "table": "a CSV/Parquet manifest",
        "pairs": "original/variation pairs",
        "counterfactual": "a folder of edits per source photo",
    }
    return f"{where} ({layout[s.layout]}, {how[s.materialize]} into data/)".replace(
        "referenced in place into data/", "referenced in place"
    )


def _check_problems(
    ctx: _Context, rows: Sequence[tuple[str, Planned]], stage: str
) -> list[tuple[str, Planned]]:
    """Stop on the first problem (policy stop) or log the skipped rows (policy skip)."""
    bad = [(kind, p) for kind, p in rows if p.problem is not None]
    if not bad:
        return bad
    # root causes first; a face's own problem explains its variations' "base_skipped"
    bad.sort(key=lambda kp: kp[1].problem is not None and kp[1].problem.check == "base_skipped")
    causes = [kp for kp in bad if kp[1].problem and kp[1].problem.check != "base_skipped"]
    counts = Counter(p.problem.check for _, p in bad if p.problem)
    summary = ", ".join(f"{n} {c}" for c, n in sorted(counts.items()))
    if ctx.settings.on_error == "stop":
        first = bad[0][1].problem
        assert first is not None
        for _, p in (causes or bad)[1:11]:
            log.warning("import: %s", p.problem.message if p.problem else "")
        raise StylisticBiasError(
            f"{first.message} [import {stage}: {len(bad)} problem(s): {summary}; "
            "nothing was written; generator.on_error=skip imports the rest and lists them]"
        )
    shown = causes or bad
    for _, p in shown[:20]:
        log.warning("import: skipped %s", p.problem.message if p.problem else "")
    if len(shown) > 20:
        log.warning("import: ... and %d more skipped row(s)", len(shown) - 20)
    log.warning(
        "import %s: %d row(s) skipped (%s); listed in skipped.parquet", stage, len(bad), summary
    )
    return bad


def _inspect_all(
    rows: list[Planned], desc: str, max_bytes: int
) -> list[tuple[Planned, ImageInfo | None]]:
    out = []
    for p in tqdm(rows, desc=desc, unit="img", leave=False, disable=len(rows) < 200):
        if p.problem is not None:
            out.append((p, None))
            continue
        got = inspect_image(p.entry.image, p.entry.where, max_bytes)
        out.append((p.failed(got), None) if isinstance(got, Problem) else (p, got))
    return out


def _warn_conversions(ctx: _Context, inspected: Sequence[tuple[Planned, ImageInfo | None]]) -> None:
    """One warning per kind of conversion beyond an exact one, naming the images."""
    by_note: dict[str, list[str]] = {}
    for p, info in inspected:
        if info is not None and info.note:
            by_note.setdefault(info.note, []).append(p.entry.image.name)
    how = (
        "read by the judge through the same rule (referenced in place)"
        if ctx.settings.materialize == "reference"
        else "stored converted, as an 8-bit RGB PNG"
    )
    for note, names in sorted(by_note.items()):
        shown = ", ".join(names[:5]) + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
        log.warning(
            "import: %d image(s) converted to RGB: %s (background %s); %s: %s",
            len(names),
            note,
            "#{:02x}{:02x}{:02x}".format(*BACKGROUND),
            how,
            shown,
        )


def _skipped_frame(ctx: _Context, bad: Sequence[tuple[str, Planned]]) -> pd.DataFrame:
    rows = [
        {
            "kind": kind,
            "face_id": p.face_id,
            "attribute": p.variation.attribute if p.variation else p.entry.attribute,
            "value": p.variation.value if p.variation else p.entry.value,
            "source": ctx.rel(p.entry.where),
            "check": p.problem.check if p.problem else "",
            "reason": ctx.rel(p.problem.message) if p.problem else "",
        }
        for kind, p in bad
    ]
    return schemas.validate(pd.DataFrame(rows, columns=list(SKIPPED.columns)), SKIPPED, "skipped")


@contextmanager
def _staging(final: Path) -> Iterator[Path]:
    """A fresh temporary sibling of ``final`` (:func:`~stylisticbias.outputs.atomic_dir`), swapped
    in when the block succeeds; removed at once when it fails."""
    try:
        with atomic_dir(final) as tmp:
            yield tmp
    except BaseException:
        shutil.rmtree(temp_sibling(final), ignore_errors=True)
        raise


def _image_columns(
    ctx: _Context,
    p: Planned,
    info: ImageInfo | None,
    final: Path,
    tmp: Path,
    rel: str,
    warned: list[bool],
) -> dict[str, Any]:
    if info is None:
        return {
            "path": None,
            "sha256": None,
            "width": None,
            "height": None,
            "status": "error",
            "reason": f"import: {ctx.rel(p.problem.message) if p.problem else '?'}",
        }
    sha = info.sha256
    if ctx.settings.materialize == "reference":
        path = reference_path(p.entry.image, final)
    elif info.note is not None:  # a stated conversion: the converted bytes are the dataset's
        path = f"{rel}.png"
        data = converted_png(p.entry.image, p.entry.where, ctx.settings.max_image_bytes)
        (tmp / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp / path).write_bytes(data)
        sha = hashlib.sha256(data).hexdigest()
    else:
        path = f"{rel}.{info.ext}"
        place(
            p.entry.image,
            tmp / path,
            ctx.settings.materialize,
            warned=warned,
            where=p.entry.where,
            sha256=sha,
            max_bytes=ctx.settings.max_image_bytes,
        )
    return {
        "path": path,
        "sha256": sha,
        "width": info.width,
        "height": info.height,
        "status": "ok",
        "reason": None,
    }


def _listed(p: Planned) -> bool:
    """Rows the manifest keeps (as status error) when skipped: image problems of valid rows."""
    return p.problem is not None and p.problem.check in IMAGE_CHECKS


def _converted(inspected: Sequence[tuple[Planned, ImageInfo | None]]) -> dict[str, str]:
    """``<face id>/<file name>`` -> the stated conversion the image went through."""
    return {
        f"{p.face_id}/{p.entry.image.name}": info.note
        for p, info in inspected
        if info is not None and info.note
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def write_edit_sets(imported: Sequence[Planned], out: Path) -> None:
    """``counterfactuals.parquet`` of imported edits: each edit's source photo (no masks)."""
    rows = [
        {
            "image_id": f"{p.face_id}-base",
            "face_id": p.face_id,
            "source_id": p.entry.group,
            "edit": p.entry.edit,
            "mask_pixels": None,
            "changed_inside": None,
            "changed_outside": None,
        }
        for p in imported
    ]
    schemas.write_table(
        pd.DataFrame(rows, columns=list(COUNTERFACTUALS.columns)), out / SETS_FILE, COUNTERFACTUALS
    )


# --------------------------------------------------------------------------- faces stage
def import_faces(config: Config) -> Path:
    """Import the base faces into ``paths.faces``; returns ``faces.parquet``'s path.

    With ``on_error=stop`` every variation image is decoded too before anything is swapped in
    (all or nothing across both stages).
    """
    ctx = _Context(config)
    ctx.warn_unwatched()
    plan = ctx.plan("faces")
    log.info(
        "import: %s: %d base face(s), %d variation(s)",
        ctx.label,
        len(plan.faces),
        len(plan.variations),
    )
    bound = ctx.settings.max_image_bytes
    inspected = _inspect_all(list(plan.faces), "import faces", bound)
    variations = list(plan.variations)
    if ctx.settings.on_error == "stop":  # the variations' images too, before faces is swapped
        variations = [p for p, _ in _inspect_all(variations, "import: check variations", bound)]
    rows = [("face", p) for p, _ in inspected] + [("variation", p) for p in variations]
    bad = _check_problems(ctx, rows, "faces")
    _warn_conversions(ctx, inspected)
    final = ctx.root / config.paths.faces
    warned = [False]
    with _staging(final) as tmp:
        out = []
        for p, info in inspected:
            if p.problem is not None and not _listed(p):
                continue
            out.append(
                {
                    "face_id": p.face_id,
                    "image_id": f"{p.face_id}-base",
                    **p.demographics,
                    "generator": GENERATOR,
                    "prompt": p.entry.prompt,
                    "seed": 0,
                    **_image_columns(ctx, p, info, final, tmp, f"images/{p.face_id}", warned),
                    "evaluated": True,
                }
            )
        if not any(r["status"] == "ok" for r in out):
            raise StylisticBiasError(f"import: {ctx.label}: no base face could be imported")
        schemas.write_table(pd.DataFrame(out), tmp / "faces.parquet", schemas.FACES)
        if ctx.settings.layout == "counterfactual":
            write_edit_sets([p for p, info in inspected if info is not None], tmp)
        face_bad = [(k, p) for k, p in bad if k == "face"]
        _skipped_frame(ctx, face_bad).to_parquet(tmp / "skipped.parquet", index=False)
        _write_json(
            tmp / "import.json",
            {
                "source": ctx.label,
                "layout": ctx.settings.layout,
                "materialize": ctx.settings.materialize,
                "on_error": ctx.settings.on_error,
                "faces_imported": sum(r["status"] == "ok" for r in out),
                "faces_skipped": len(face_bad),
                "skipped_by_check": dict(
                    sorted(Counter(p.problem.check for _, p in face_bad if p.problem).items())
                ),
                "ignored_files": list(plan.ignored),
                "converted": _converted(inspected),
            },
        )
    log.info(
        "import: %d base face(s) -> %s (%d skipped)",
        sum(r["status"] == "ok" for r in out),
        final / "faces.parquet",
        len(face_bad),
    )
    return final / "faces.parquet"


# --------------------------------------------------------------------------- variations stage
def import_variations(config: Config) -> Path:
    """Import the variations into ``paths.variations`` (+ coverage, gallery)."""
    from stylisticbias.dataset.base_faces import load_base_faces
    from stylisticbias.gallery import write_gallery

    ctx = _Context(config)
    faces_dir = ctx.root / config.paths.faces
    # sha256 of every base image re-checked; references reach data/import: inside paths.data
    faces = load_base_faces(faces_dir, ctx.benchmark, ctx.data_root)
    ok = faces[faces["status"] == "ok"].set_index("face_id")
    plan = ctx.plan("variations")
    checked = []
    for p in plan.variations:
        if p.problem is None and p.face_id not in ok.index:
            p = p.failed(
                Problem(
                    "base_skipped",
                    f"{p.entry.where}: its base face {p.face_id} is not an imported face of "
                    f"{faces_dir / 'faces.parquet'}",
                )
            )
        checked.append(p)
    inspected = _inspect_all(checked, "import variations", ctx.settings.max_image_bytes)
    bad = _check_problems(ctx, [("variation", p) for p, _ in inspected], "variations")
    _warn_conversions(ctx, inspected)
    final = ctx.root / config.paths.variations
    warned = [False]
    with _staging(final) as tmp:
        out = []
        for p, info in inspected:
            if (p.problem is not None and not _listed(p)) or p.variation is None:
                continue
            v, base = p.variation, ok.loc[p.face_id]
            out.append(
                {
                    "image_id": f"{p.face_id}-{v.slug}",
                    "face_id": p.face_id,
                    "category": v.category,
                    "attribute": v.attribute,
                    "value": v.value,
                    "framing": v.framing,
                    **{a: str(base[a]) for a in ("age", "gender", "ethnicity", "body_type")},
                    "generator": GENERATOR,
                    "prompt": p.entry.prompt,
                    "seed": 0,
                    **_image_columns(
                        ctx, p, info, final, tmp, f"images/{p.face_id}/{v.slug}", warned
                    ),
                    "evaluated": v.evaluated,
                }
            )
        table = pd.DataFrame(out, columns=list(schemas.VARIATIONS.columns))
        schemas.write_table(table, tmp / "variations.parquet", schemas.VARIATIONS)
        _skipped_frame(ctx, bad).to_parquet(tmp / "skipped.parquet", index=False)
        cov = coverage(faces, table, ctx.benchmark)
        cov["source"] = ctx.label
        cov["variations_skipped"] = len(bad)
        cov["ignored_files"] = list(plan.ignored)
        cov["converted"] = _converted(inspected)
        _write_json(tmp / "coverage.json", cov)
        log_coverage(cov, ctx.label)
        max_faces = config.gallery.max_faces
        write_gallery(
            faces,
            table,
            tmp / "gallery.html",
            faces_dir,
            tmp,
            max_faces=max_faces,
            preamble=coverage_html(cov, ctx.label),
        )
    log.info(
        "import: %d variation(s) -> %s (%d skipped)",
        int((table["status"] == "ok").sum()),
        final / "variations.parquet",
        len(bad),
    )
    return final / "variations.parquet"
