"""The ``faces`` and ``variations`` stages: render the dataset and write validated manifests.

Data flow::

    Config (faces, generator, benchmark) -> sample_identities -> FaceSpec
      -> Generator.generate_faces -> data/faces/images/<face_id>.<ext> + faces.parquet
    faces.parquet + base images (sha256-checked) -> EditSpec per (face, plausible value)
      -> Generator.edit -> data/variations/images/<face_id>/<slug>.<ext> + variations.parquet
      + gallery.html

Every request goes through :class:`RenderCache` (``data/.render-cache/``), so a run that is
killed resumes where it stopped; outputs are hard links into the cache.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias import schemas
from stylisticbias.benchmark import Benchmark, VariationValue, load_benchmark
from stylisticbias.config import project_root
from stylisticbias.dataset.base_faces import load_base_faces
from stylisticbias.dataset.counterfactual_sets import build_procedural_sets
from stylisticbias.dataset.importer import import_faces, import_variations, is_import
from stylisticbias.dataset.render_cache import CacheRecord, RenderCache, request_key
from stylisticbias.dataset.rendering import (
    execute,
    generator_code_version,
    generator_config,
    generator_workers,
    make_generator,
    run_edits,
    run_faces,
)
from stylisticbias.errors import StylisticBiasError
from stylisticbias.generators.base import EditSpec, FaceSpec
from stylisticbias.output_paths import data_root, stage_output
from stylisticbias.outputs import OutputLock, atomic_dir
from stylisticbias.sampling import face_seed, sample_identities
from stylisticbias.spec import Config
from stylisticbias.spec.sections import FacesSpec

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- helpers
@dataclass(frozen=True)
class BuildContext:
    """Resolved paths and settings shared by both stages."""

    root: Path
    benchmark: Benchmark
    gen_cfg: dict[str, Any]
    workers: int
    retry_failed: bool
    cache: RenderCache

    @classmethod
    def from_config(cls, config: Config) -> BuildContext:
        """Build the context from the typed configuration (the protocol resolved here, once)."""
        root = project_root()
        gen_cfg = generator_config(config.generator)
        gen_cfg["_code_version"] = generator_code_version(gen_cfg)
        cache_root = data_root(root, config.paths.data) / ".render-cache"
        return cls(
            root=root,
            benchmark=load_benchmark(config.protocol),
            gen_cfg=gen_cfg,
            workers=generator_workers(config.generator),
            retry_failed=bool(config.generation.retry_failed),
            cache=RenderCache(cache_root),
        )

    def cached(self, key: str) -> CacheRecord | None:
        """A finished record: ``ok``, or a permanent refusal/block unless those are retried.

        A transient failure (``error``: network, timeout, 5xx, quota) is never final: it is
        requested again on every run.
        """
        rec = self.cache.get(key)
        if rec is None or rec.status == "error":
            return None
        if rec.status != "ok" and self.retry_failed:
            return None
        return rec


def _check_transient(stage: str, rows: list[dict[str, Any]]) -> None:
    """Refuse to write an output while transient failures remain (the next run retries them)."""
    errors = [r for r in rows if r["status"] == "error"]
    if errors:
        first = errors[0]
        raise StylisticBiasError(
            f"{stage}: {len(errors)} request(s) failed with a transient error (first: "
            f"{first.get('image_id')}: {first.get('reason')}); finished images are cached -- "
            "re-run the stage to retry them; the previous output is left as it was"
        )


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), max(1, size)):
        yield items[i : i + size]


def _image_columns(rec: CacheRecord, rel: str) -> dict[str, Any]:
    ok = rec.status == "ok"
    return {
        "path": rel if ok else None,
        "sha256": rec.sha256 if ok else None,
        "width": rec.width if ok else None,
        "height": rec.height if ok else None,
        "status": rec.status,
        "reason": rec.reason,
    }


def _generator_name(gen_cfg: dict[str, Any]) -> str:
    return str(gen_cfg.get("name") or str(gen_cfg["_target_"]).rsplit(".", 1)[-1])


# --------------------------------------------------------------------------- faces stage
def build_faces(config: Config) -> Path:
    """Render the base faces and write ``data/faces/faces.parquet``; returns the table path.

    The whole configuration and the output path are checked before anything is written; the
    output is built beside ``paths.faces`` and swapped in only when complete.
    """
    root = project_root()
    composed = asdict(config)  # the output-path checks read the mapping
    out_dir = stage_output(composed, "faces", root)
    with OutputLock(root, out_dir):
        if is_import(config.generator):  # an existing image set, nothing rendered
            return import_faces(config)
        benchmark = load_benchmark(config.protocol)
        if benchmark.counterfactual:  # every source photo edited to each cell of the axes
            gen_cfg = generator_config(config.generator)
            workers = generator_workers(config.generator)
            return build_procedural_sets(benchmark, config.faces, gen_cfg, out_dir, workers)
        return _build_faces(config, config.faces, out_dir)


def _build_faces(config: Config, settings: FacesSpec, out_dir: Path) -> Path:
    ctx = BuildContext.from_config(config)
    n = settings.n
    ids = sample_identities(ctx.benchmark, n, seed=settings.seed, sampler=settings.sampler)
    specs = [
        FaceSpec(
            face_id=r.face_id,
            age=r.age,
            gender=r.gender,
            ethnicity=r.ethnicity,
            body_type=r.body_type,
            seed=int(r.seed),
            prompt=ctx.benchmark.base_face_prompt(
                age=r.age, gender=r.gender, ethnicity=r.ethnicity, body_type=r.body_type
            ),
        )
        for r in ids.itertuples()
    ]
    keys = [
        request_key({"kind": "face", "generator": ctx.gen_cfg, "spec": s.__dict__}) for s in specs
    ]
    todo = [(k, s) for k, s in zip(keys, specs) if ctx.cached(k) is None]
    log.info("faces: %d identities, %d cached, %d to render", n, n - len(todo), len(todo))
    if todo:
        probe = make_generator(ctx.gen_cfg)  # fail fast (bad config, missing API key)
        batch = probe.batch_size
        probe.close()
        tasks = [([k for k, _ in b], [s for _, s in b]) for b in _batches(todo, batch)]
        for _ in execute(
            tasks, run_faces, ctx.gen_cfg, ctx.cache.root, ctx.workers, "faces", len(todo)
        ):
            pass
    records = []
    for k, s in zip(keys, specs):
        rec = ctx.cache.get(k)
        if rec is None:
            raise StylisticBiasError(
                f"faces: request for {s.face_id} did not finish; re-run the stage"
            )
        records.append(rec)
    rows = []
    gname = _generator_name(ctx.gen_cfg)
    for rec, s in zip(records, specs):
        rel = f"images/{s.face_id}.{rec.ext}"
        rows.append(
            {
                "face_id": s.face_id,
                "image_id": f"{s.face_id}-base",
                "age": s.age,
                "gender": s.gender,
                "ethnicity": s.ethnicity,
                "body_type": s.body_type,
                "generator": gname,
                "prompt": s.prompt,
                "seed": s.seed,
                **_image_columns(rec, rel),
                "evaluated": True,
            }
        )
    _check_transient("faces", rows)
    frame = schemas.validate(pd.DataFrame(rows), schemas.FACES, out_dir / "faces.parquet")
    with atomic_dir(out_dir) as tmp:
        for rec, row in zip(records, rows):
            if rec.status == "ok":
                ctx.cache.materialize(rec, tmp / row["path"])
        schemas.write_table(frame, tmp / "faces.parquet", schemas.FACES)
    _log_failures("faces", rows)
    return out_dir / "faces.parquet"


# --------------------------------------------------------------------------- variations stage
def variation_grid(
    benchmark: Benchmark, faces: pd.DataFrame, scope: str = "full"
) -> list[tuple[Any, VariationValue]]:
    """(face row, value) for every plausible value of every ok face (evaluated: whitelist)."""
    if scope not in ("full", "evaluated"):
        raise StylisticBiasError(f"unknown variations.scope {scope!r}; valid: full, evaluated")
    grid = []
    for row in faces.itertuples():
        if row.status != "ok":
            continue
        for v in benchmark.variations_for(str(row.gender), evaluated_only=scope == "evaluated"):
            grid.append((row, v))
    return grid


def build_variations(config: Config) -> Path:
    """Render every single-attribute edit and write ``data/variations/variations.parquet``.

    The configuration, the output path and every base image are checked before anything is
    written; the output is built beside ``paths.variations`` and swapped in when complete.
    """
    root = project_root()
    composed = asdict(config)  # the output-path checks read the mapping
    out_dir = stage_output(composed, "variations", root)
    faces_dir = root / str(config.paths.faces)
    scope = str(config.variations.scope)
    with OutputLock(root, out_dir):
        if is_import(config.generator):
            return import_variations(config)
        return _build_variations(config, out_dir, faces_dir, scope)


def _build_variations(config: Config, out_dir: Path, faces_dir: Path, scope: str) -> Path:
    ctx = BuildContext.from_config(config)
    data = data_root(ctx.root, config.paths.data)
    faces = load_base_faces(faces_dir, ctx.benchmark, data)
    grid = variation_grid(ctx.benchmark, faces, scope)
    entries = []
    for row, v in grid:
        spec = FaceSpec(
            row.face_id,
            row.age,
            row.gender,
            row.ethnicity,
            row.body_type,
            int(row.seed),
            row.prompt,
        )
        edit = EditSpec(
            face=spec,
            variation=v,
            prompt=ctx.benchmark.variation_prompt(v, gender=str(row.gender)),
            seed=face_seed(int(row.seed), v.slug),
        )
        key = request_key(
            {
                "kind": "edit",
                "generator": ctx.gen_cfg,
                "base_sha256": row.sha256,
                "prompt": edit.prompt,
                "seed": edit.seed,
                "variation": v.slug,
            }
        )
        entries.append((key, edit, (faces_dir / str(row.path)).resolve()))
    todo = [e for e in entries if ctx.cached(e[0]) is None]
    log.info(
        "variations: %d edits of %d faces, %d cached, %d to render",
        len(entries),
        len(faces),
        len(entries) - len(todo),
        len(todo),
    )
    if todo:
        probe = make_generator(ctx.gen_cfg)
        batch = probe.batch_size
        bad = probe.unsupported([e[1].variation for e in todo])
        probe.close()
        if bad:
            shown = "; ".join(f"{slug}: {why}" for slug, why in sorted(bad.items())[:5])
            more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
            raise StylisticBiasError(
                f"conf/benchmark: {len(bad)} variation value(s) the {probe.name} generator "
                f"cannot render -- {shown}{more}; nothing was rendered"
            )
        by_face: dict[str, list[tuple[str, EditSpec, Path]]] = {}
        for e in todo:
            by_face.setdefault(e[1].face.face_id, []).append(e)
        tasks = [
            (str(group[0][2]), [k for k, _, _ in b], [s for _, s, _ in b])
            for group in by_face.values()
            for b in _batches(group, batch)
        ]
        for _ in execute(
            tasks, run_edits, ctx.gen_cfg, ctx.cache.root, ctx.workers, "variations", len(todo)
        ):
            pass
    rows = []
    records = []
    gname = _generator_name(ctx.gen_cfg)
    for key, e, _ in entries:
        rec = ctx.cache.get(key)
        if rec is None:
            raise StylisticBiasError(
                f"variations: request {e.face.face_id}/{e.variation.slug} did not finish"
            )
        records.append(rec)
        rel = f"images/{e.face.face_id}/{e.variation.slug}.{rec.ext}"
        v = e.variation
        rows.append(
            {
                "image_id": f"{e.face.face_id}-{v.slug}",
                "face_id": e.face.face_id,
                "category": v.category,
                "attribute": v.attribute,
                "value": v.value,
                "framing": v.framing,
                "age": e.face.age,
                "gender": e.face.gender,
                "ethnicity": e.face.ethnicity,
                "body_type": e.face.body_type,
                "generator": gname,
                "prompt": e.prompt,
                "seed": e.seed,
                **_image_columns(rec, rel),
                "evaluated": v.evaluated,
            }
        )
    _check_transient("variations", rows)
    columns = list(schemas.VARIATIONS.columns)
    frame = schemas.validate(
        pd.DataFrame(rows, columns=columns), schemas.VARIATIONS, out_dir / "variations.parquet"
    )
    with atomic_dir(out_dir) as tmp:
        for rec, row in zip(records, rows):
            if rec.status == "ok":
                ctx.cache.materialize(rec, tmp / row["path"])
        schemas.write_table(frame, tmp / "variations.parquet", schemas.VARIATIONS)
        gallery = _write_gallery(
            config.gallery.max_faces, faces, frame, faces_dir, tmp, config.paths.qa, out_dir
        )
    log.info("gallery: %s", out_dir / gallery.name)
    _log_failures("variations", rows)
    return out_dir / "variations.parquet"


def _write_gallery(
    max_faces: int | None,
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    faces_dir: Path,
    out_dir: Path,
    qa_dir: str | None = None,
    final: Path | None = None,
) -> Path:
    """The contact sheet in ``out_dir``; ``qa_dir`` (``paths.qa``) and ``final`` (where the sheet
    will live) give the relative link to the QA stage's data script ``<paths.qa>/gallery_qa.js``."""
    from stylisticbias.gallery import QA_DATA, write_gallery

    qa_script = None
    if qa_dir is not None:
        target = project_root() / str(qa_dir) / QA_DATA
        qa_script = Path(os.path.relpath(target, (final or out_dir).resolve())).as_posix()
    return write_gallery(
        faces,
        variations,
        out_dir / "gallery.html",
        faces_dir,
        out_dir,
        max_faces=max_faces,
        qa_script=qa_script,
    )


def _log_failures(stage: str, rows: list[dict[str, Any]]) -> None:
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        log.warning(
            "%s: %d request(s) not rendered (%s); they are recorded in the manifest -- set "
            "generation.retry_failed=true to retry them",
            stage,
            len(bad),
            ", ".join(sorted({r["status"] for r in bad})),
        )
