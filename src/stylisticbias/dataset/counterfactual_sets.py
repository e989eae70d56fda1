"""Counterfactual image sets: every source photo edited to each cell of the protocol's
``counterfactual.axes`` (REFLECT: race x gender), written by the ``faces`` stage.

``data/faces/faces.parquet`` holds one row per *edit* (its demographics are the edit's: the
edited axes from the target cell, the others the source's); ``counterfactuals.parquet`` beside
it maps each edit to its **source photo** (``source_id``, the sampling unit every task table
clusters on) and its ``edit`` (the cell's slug, e.g. ``asian-female``). The procedural
generator draws the sets offline (:func:`build_procedural_sets`:
:mod:`stylisticbias.generators.procedural.counterfactual`) and writes, per source,
``sources/<source>.png`` (the unedited photo, never judged) and ``masks/<source>.png`` (the face
mask: white where an edit may differ); each edit's row records how many pixels differ from the
source inside and outside that mask (outside: 0 by construction, checked here). The importer's
``counterfactual`` layout (:mod:`stylisticbias.dataset.importer.edit_sets`) writes the same
table for a folder of edits per source photo, without masks.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa
from PIL import Image

from stylisticbias import schemas
from stylisticbias.benchmark import Benchmark
from stylisticbias.dataset.render_cache import sha256_file
from stylisticbias.errors import StylisticBiasError
from stylisticbias.forked import ordered_map
from stylisticbias.generators.base import FaceSpec
from stylisticbias.outputs import atomic_dir
from stylisticbias.sampling import sample_identities
from stylisticbias.spec.sections import FacesSpec

log = logging.getLogger(__name__)

#: the table beside ``faces.parquet`` mapping every edit to its source photo
SETS_FILE = "counterfactuals.parquet"

COUNTERFACTUALS = pa.DataFrameSchema(
    {
        "image_id": pa.Column(str, unique=True),
        "face_id": pa.Column(str, unique=True),
        "source_id": pa.Column(str),
        "edit": pa.Column(str),
        # pixels of the face mask, and pixels differing from the source photo inside and
        # outside it (null when the set has no mask: imported edits)
        "mask_pixels": pa.Column("Int64", nullable=True),
        "changed_inside": pa.Column("Int64", nullable=True),
        "changed_outside": pa.Column("Int64", nullable=True),
    },
    strict=True,
    coerce=True,
    unique=["source_id", "edit"],
    name="counterfactuals",
)


def edit_slug(cell: Mapping[str, str]) -> str:
    """The file-name-safe slug of an edit's cell (``{"ethnicity": "Middle Eastern", "gender":
    "male"}`` -> ``middle-eastern-male``)."""
    return "-".join(re.sub(r"[^a-z0-9]+", "-", str(v).lower()).strip("-") for v in cell.values())


def edit_cells(benchmark: Benchmark) -> list[dict[str, str]]:
    """Every cell of the protocol's edited axes, in grid order."""
    axes = benchmark.counterfactual
    return [
        dict(zip(axes, vals))
        for vals in itertools.product(*(benchmark.demographics[a] for a in axes))
    ]


def read_sets(faces_dir: Path) -> pd.DataFrame | None:
    """The counterfactual table of a faces directory (None when the images are not sets)."""
    path = faces_dir / SETS_FILE
    return schemas.read_table(path, COUNTERFACTUALS) if path.is_file() else None


def _png(array: np.ndarray, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path, format="PNG")


def _source_set(
    r: Any, benchmark: Benchmark, cells: list[dict[str, str]], size: int, tmp: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Render every edit of source identity ``r`` into ``tmp``: its faces and sets rows."""
    from stylisticbias.generators.procedural.counterfactual import counterfactual_set

    faces: list[dict[str, Any]] = []
    sets: list[dict[str, Any]] = []
    src = FaceSpec(
        str(r.face_id),
        str(r.age),
        str(r.gender),
        str(r.ethnicity),
        str(r.body_type),
        int(r.seed),
        "",
    )
    cs = counterfactual_set(src, cells, size)
    _png(cs.source, tmp / "sources" / f"{src.face_id}.png")
    _png((cs.mask * 255).astype(np.uint8), tmp / "masks" / f"{src.face_id}.png")
    outside = ~cs.mask
    for cell, img in zip(cells, cs.images):
        slug = edit_slug(cell)
        diff = np.any(img != cs.source, axis=-1)
        if diff[outside].any():
            raise StylisticBiasError(
                f"faces: edit {slug} of {src.face_id} changes {int(diff[outside].sum())} "
                "pixel(s) outside its face mask; nothing written"
            )
        face_id = f"{src.face_id}-{slug}"
        rel = f"images/{src.face_id}/{slug}.png"
        _png(img, tmp / rel)
        demo = {
            "age": src.age,
            "gender": src.gender,
            "ethnicity": src.ethnicity,
            "body_type": src.body_type,
            **cell,
        }
        faces.append(
            {
                "face_id": face_id,
                "image_id": f"{face_id}-base",
                **demo,
                "generator": "procedural",
                "prompt": benchmark.base_face_prompt(**demo)
                if "base_face" in benchmark.prompts
                else "",
                "seed": src.seed,
                "path": rel,
                "sha256": sha256_file(tmp / rel),
                "width": img.shape[1],
                "height": img.shape[0],
                "status": "ok",
                "reason": None,
                "evaluated": True,
            }
        )
        sets.append(
            {
                "image_id": f"{face_id}-base",
                "face_id": face_id,
                "source_id": src.face_id,
                "edit": slug,
                "mask_pixels": int(cs.mask.sum()),
                "changed_inside": int(diff[cs.mask].sum()),
                "changed_outside": 0,
            }
        )
    return faces, sets


def build_procedural_sets(
    benchmark: Benchmark,
    settings: FacesSpec,
    gen_cfg: Mapping[str, Any],
    out_dir: Path,
    workers: int = 1,
) -> Path:
    """Draw ``settings.n`` source identities and render every edit of each with the procedural
    generator; writes ``faces.parquet``, :data:`SETS_FILE`, ``images/``, ``sources/`` and
    ``masks/`` into ``out_dir`` atomically. Returns ``faces.parquet``'s path. ``workers``
    (the generator's builder processes) render sources at once; the files do not depend on it."""
    target = str(gen_cfg.get("_target_", ""))
    if not target.endswith("ProceduralGenerator"):
        raise StylisticBiasError(
            f"{benchmark.source}: counterfactual sets (counterfactual.axes) are drawn by "
            f"generator=procedural or imported (generator=import, generator.layout="
            f"counterfactual); generator {target.rsplit('.', 1)[-1] or '?'} cannot draw them"
        )
    size = int(gen_cfg.get("size", 256))
    cells = edit_cells(benchmark)
    ids = sample_identities(benchmark, settings.n, seed=settings.seed, sampler=settings.sampler)
    faces: list[dict[str, Any]] = []
    sets: list[dict[str, Any]] = []
    rows = list(ids.itertuples())
    with atomic_dir(out_dir) as tmp:

        def one_source(i: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            return _source_set(rows[i], benchmark, cells, size, tmp)

        for f, s in ordered_map(one_source, range(len(rows)), workers):
            faces += f
            sets += s
        schemas.write_table(pd.DataFrame(faces), tmp / "faces.parquet", schemas.FACES)
        schemas.write_table(pd.DataFrame(sets), tmp / SETS_FILE, COUNTERFACTUALS)
    log.info(
        "faces: %d source photo(s) x %d edit(s) (%s) -> %s",
        len(ids),
        len(cells),
        " x ".join(benchmark.counterfactual),
        out_dir / "faces.parquet",
    )
    return out_dir / "faces.parquet"
