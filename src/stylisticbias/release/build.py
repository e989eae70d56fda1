"""Write the release folder from the DVC outputs (``python -m stylisticbias.release``).

Layout of ``release.out``::

    README.md                  dataset card (Hugging Face layout)
    croissant.json             Croissant 1.1 + RAI, sha256 of every file object
    images.parquet             one row per image (stylisticbias.release.table.COLUMNS)
    images/faces/...           base faces (hard links into data/, or copies)
    images/variations/...      single-attribute edits
    protocol/<protocol>.yaml   the benchmark protocol
    judgments/<model>.parquet  per judged model (release.judgments: true)
    scores/<model>.parquet     phi per image x scenario, delta per variation x scenario
    .stylisticbias-release     marker: this command made the folder (and may replace it)

The folder is built beside ``release.out`` and swapped in whole (a failed run leaves the
previous release). Only a folder this command made (its marker inside) or an empty one is
replaced; any other existing folder or file, and every place
:func:`stylisticbias.output_paths.writable_place` refuses (a home or system directory,
``.venv``, ``.cache``, ``mlruns``, a git-tracked file or a folder holding one), is refused in
one line before anything is written. Its bytes depend on the DVC outputs and the configuration
only: no timestamps, no software versions (the Parquet files are written by the pinned
pyarrow).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from stylisticbias.benchmark import protocol_path
from stylisticbias.config import project_root
from stylisticbias.dataset.importer.settings import is_import
from stylisticbias.dataset.rendering import generator_section
from stylisticbias.errors import StylisticBiasError
from stylisticbias.output_paths import (
    PROTECTED,
    check_replaceable,
    tracked_files,
    writable_place,
)
from stylisticbias.outputs import (
    atomic_dir,
    atomic_write_json,
    atomic_write_parquet,
    atomic_write_text,
)
from stylisticbias.release import card, croissant
from stylisticbias.release.facts import (
    ModelPart,
    ReleaseFacts,
    count_facts,
    generator_kind,
    release_license,
)
from stylisticbias.release.table import image_rows, sha256_file
from stylisticbias.spec import Config
from stylisticbias.spec.sections import PathsSpec

log = logging.getLogger(__name__)

#: project folders a release may never be written into or over
_PROTECTED = ("conf", "src", "pipelines", "tests", "docs", "reports", ".dvc", ".git", "data")


@dataclass(frozen=True)
class ReleaseResult:
    """Where the release went and what it holds."""

    out: Path
    n_images: int
    models: tuple[str, ...]


#: the file in every release folder this command writes (it replaces only such a folder)
MARKER = ".stylisticbias-release"


def _out_dir(raw: str, root: Path) -> Path:
    """``release.out`` resolved, refused in one line unless the release may replace it."""
    root = root.resolve()
    out = (root / raw).resolve() if not Path(raw).is_absolute() else Path(raw).resolve()
    bad = out == root or root.is_relative_to(out)
    bad = bad or any(out.is_relative_to((root / p).resolve()) for p in _PROTECTED)
    if bad:
        raise StylisticBiasError(
            f"release.out={raw!r}: would write into or over the project ({out}); choose a "
            "folder of its own, e.g. `release` (git-ignored) or a path outside the project"
        )
    out = writable_place(root, raw, "release.out", protected=(*PROTECTED, *_PROTECTED))
    tracked = tracked_files(root, [out])
    if tracked:
        raise StylisticBiasError(
            f"release.out={raw!r}: {tracked[0].relative_to(root)} is tracked by git; choose "
            "a folder of its own, e.g. `release` (git-ignored) or a path outside the project"
        )
    check_replaceable(out, "release.out", raw, MARKER)
    return out


def _place(src: Path, dest: Path, materialize: str) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if materialize == "hardlink":
        try:
            os.link(src, dest)
            return
        except OSError:  # another file system: copy
            pass
    shutil.copyfile(src, dest)


def _file_entry(out: Path, rel: str, fmt: str, desc: str) -> dict[str, Any]:
    p = out / rel
    return croissant.file_object(rel, rel, sha256_file(p), p.stat().st_size, fmt, desc)


def _model_parts(
    paths: PathsSpec, models: Mapping[str, Any], root: Path, out: Path
) -> tuple[list[ModelPart], list[dict], list[dict]]:
    """Copy each judged model's judgments and scores (``models``: name -> its model spec); their
    file objects and record sets."""
    parts, files, sets = [], [], []
    for name, spec in models.items():
        jsrc = root / paths.judgments / name / "judgments.parquet"
        ssrc = root / paths.scores / f"model={name}" / "part-0.parquet"
        missing = [str(p) for p in (jsrc, ssrc) if not p.is_file()]
        if missing:
            raise StylisticBiasError(
                f"{missing[0]}: not found; run `dvc repro` (judge@{name}, scores@{name}) or "
                "set release.judgments=false"
            )
        jrel, srel = f"judgments/{name}.parquet", f"scores/{name}.parquet"
        for src, rel in ((jsrc, jrel), (ssrc, srel)):
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out / rel)
        simulated = bool(pq.read_table(ssrc, columns=["simulated"])["simulated"].to_numpy().any())
        parts.append(
            ModelPart(
                name=name,
                display_name=str(getattr(spec, "display_name", None) or name),
                simulated=simulated,
                judgments=jrel,
                scores=srel,
            )
        )
        for rel, what, key in (
            (jrel, "judgments", ("image_id", "scenario_id", "ordering", "seed")),
            (srel, "scores", ("image_id", "scenario_id")),
        ):
            fid = rel
            files.append(_file_entry(out, rel, croissant.PARQUET, f"{what} of model {name}"))
            sets.append(
                croissant.table_record_set(
                    f"{what}-{name}",
                    fid,
                    f"The {what} of model {name}" + (" (SIMULATED judge)." if simulated else "."),
                    pq.read_schema(out / rel),
                    key,
                )
            )
    return parts, files, sets


def build_release(config: Config) -> ReleaseResult:
    """Write the release folder named by ``release.out``; returns where and what."""
    root = project_root()
    rel_cfg = config.release
    gen = generator_section(config.generator)  # as composed (its kind and source are described)
    imported = is_import(gen)
    lic = release_license(gen, rel_cfg, imported)  # first: a missing licence writes nothing
    out_final = _out_dir(str(rel_cfg.out), root)
    table, files = image_rows(root / config.paths.faces, root / config.paths.variations, gen)
    kind, how = generator_kind(gen, imported)
    proto_src = protocol_path(config.protocol)
    proto_rel = f"protocol/{proto_src.name}"
    with atomic_dir(out_final) as out:
        for src, rel in files:
            _place(src, out / rel, str(rel_cfg.materialize))
        atomic_write_parquet(table, out / "images.parquet")
        atomic_write_text(out / MARKER, "made by python -m stylisticbias.release\n")
        (out / "protocol").mkdir()
        shutil.copyfile(proto_src, out / proto_rel)
        distribution = [
            _file_entry(out, "images.parquet", croissant.PARQUET, "One row per image."),
            _file_entry(out, proto_rel, croissant.YAML, "The benchmark protocol."),
        ]
        file_sets = []
        for sub in ("faces", "variations"):
            if (out / "images" / sub).is_dir():
                fs = f"images-{sub}"
                file_sets.append(fs)
                suffixes = sorted(
                    {Path(r).suffix for _, r in files if r.startswith(f"images/{sub}/")}
                )
                distribution.append(
                    {
                        "@type": "cr:FileSet",
                        "@id": fs,
                        "name": fs,
                        "description": f"The {sub} image files (sha256 of each in images.parquet).",
                        "encodingFormat": sorted({_mime(s) for s in suffixes}),
                        "includes": [f"images/{sub}/**/*{s}" for s in suffixes],
                    }
                )
        record_sets = [croissant.images_record_set(), *croissant.image_files_record_set(file_sets)]
        parts: list[ModelPart] = []
        if rel_cfg.judgments:
            parts, mfiles, msets = _model_parts(config.paths, config.models, root, out)
            distribution += mfiles
            record_sets += msets
        facts = ReleaseFacts(
            name=str(rel_cfg.name),
            license=lic,
            url=rel_cfg.url,
            date_published=rel_cfg.date_published,
            citation=str(rel_cfg.citation),
            imported=imported,
            generator_kind=kind,
            generated_by=how,
            source=str(gen.get("source")) if imported else None,
            protocol_file=proto_rel,
            models=tuple(parts),
            **count_facts(table),
        )
        version = _version(distribution)
        atomic_write_json(
            out / "croissant.json", croissant.croissant(facts, distribution, record_sets, version)
        )
        atomic_write_text(out / "README.md", card.card(facts))
    log.info(
        "release: %s (%d images, %d model(s), licence %s)", out_final, len(table), len(parts), lic
    )
    return ReleaseResult(out_final, len(table), tuple(p.name for p in parts))


_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}


def _mime(suffix: str) -> str:
    return _MIME.get(suffix.lower(), f"image/{suffix.lower().lstrip('.')}")


def _version(distribution: list[dict[str, Any]]) -> str:
    """``1.0.0+<12 hex>``: the content hash of every file object (same data, same version)."""
    h = hashlib.sha256()
    for d in distribution:
        h.update(f"{d['@id']}={d.get('sha256', '')}\n".encode())
    return f"1.0.0+{h.hexdigest()[:12]}"
