"""The ``locality`` stage: edit locality of every variation vs its base face -> ``<paths.qa>``.

Reads the faces and variations manifests (nothing is rendered again unless the generator can
draw masks: the procedural generator re-draws each edit's layer mask, not its image), compares
every face-framed edit with its base face pixel by pixel and writes
``<paths.qa>/locality.parquet`` (:data:`~stylisticbias.qa.tables.LOCALITY`). Full-body edits
(fashion) have no base image of the same framing: their rows say so (``not_comparable``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from stylisticbias import schemas
from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.config import config_output, config_path, project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.forked import ordered_map
from stylisticbias.output_paths import data_root, safe_member
from stylisticbias.outputs import OutputLock
from stylisticbias.qa.locality import (
    LocalityThresholds,
    MaskSource,
    edit_locality,
    mask_source_for,
)
from stylisticbias.qa.tables import LOCALITY
from stylisticbias.spec import Config
from stylisticbias.spec.qa import QASpec

log = logging.getLogger(__name__)

LOCALITY_FILE = "locality.parquet"


def thresholds(spec: QASpec) -> LocalityThresholds:
    """The locality thresholds of ``spec``."""
    loc = spec.locality
    return LocalityThresholds(
        float(loc.pixel_tol), float(loc.max_outside), float(loc.max_changed_outside)
    )


def mask_source(config: Config) -> MaskSource:
    """Masks of the configured generator: exact when its class has ``edit_mask``, else none.

    Only such a generator is constructed (a diffusion model or an API client never is).
    """
    from hydra.utils import get_class

    from stylisticbias.dataset.rendering import generator_config, make_generator

    cfg = generator_config(config.generator)
    try:
        cls = get_class(str(cfg["_target_"]))
    except Exception:  # an import set or a plug-in that does not import: no masks
        return mask_source_for(None)
    if not callable(getattr(cls, "edit_mask", None)):
        return mask_source_for(None)
    return mask_source_for(make_generator(cfg))


def _rgb(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def locality_table(
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    faces_dir: Path,
    variations_dir: Path,
    benchmark: Benchmark,
    masks: MaskSource,
    limits: LocalityThresholds,
    data: Path | None = None,
    workers: int = 1,
) -> pd.DataFrame:
    """One :data:`LOCALITY` row per variation (edits grouped by face: masks reuse its scene).

    ``workers``: processes measuring faces at once (:func:`~stylisticbias.forked.ordered_map`);
    the table does not depend on it."""
    face_rows = {str(r["face_id"]): r for r in faces.to_dict("records")}
    groups = {str(k): g for k, g in variations.groupby("face_id", sort=True)}

    def face_table(face_id: str) -> list[dict[str, Any]]:
        face = face_rows.get(face_id)
        dirs = (faces_dir, variations_dir, data)
        return _face_locality(face, groups[face_id], dirs, benchmark, masks, limits)

    rows = [r for part in ordered_map(face_table, list(groups), workers) for r in part]
    cols = list(LOCALITY.columns)
    out = pd.DataFrame(rows, columns=cols)
    out["locality_pass"] = out["locality_pass"].astype("boolean")
    return out.sort_values("image_id", kind="stable").reset_index(drop=True)


def _face_locality(
    face: dict[str, Any] | None,
    group: pd.DataFrame,
    dirs: tuple[Path, Path, Path | None],
    benchmark: Benchmark,
    masks: MaskSource,
    limits: LocalityThresholds,
) -> list[dict[str, Any]]:
    """The locality rows of one face's edits (``group``) against its base image; ``dirs``:
    the faces and variations directories and the data root."""
    faces_dir, variations_dir, data = dirs
    nan = float("nan")
    rows: list[dict[str, Any]] = []
    base: np.ndarray | None = None
    if face is not None and face["status"] == "ok":
        where = f"faces.parquet face {face['face_id']}"
        base = _rgb(safe_member(faces_dir, str(face["path"]), where, data))
    for v in group.sort_values("image_id").to_dict("records"):
        row: dict[str, Any] = {
            k: v[k] for k in ("image_id", "face_id", "attribute", "value", "framing")
        }
        row.update(
            mask_source="not_comparable",
            mask_share=nan,
            diff_inside=nan,
            diff_outside=nan,
            diff_all=nan,
            gap=nan,
            ratio=nan,
            changed_outside=nan,
            leak=nan,
            locality_pass=None,
            reason=None,
        )
        if v["status"] != "ok":
            row["reason"] = f"edit not rendered ({v['status']})"
        elif base is None:
            row["reason"] = "no rendered base face"
        else:
            where = f"variations.parquet image {v['image_id']}"
            edit = _rgb(safe_member(variations_dir, str(v["path"]), where, data))
            if edit.shape != base.shape:
                row["reason"] = (
                    f"{v['framing']} edit is {edit.shape[1]}x{edit.shape[0]}, its base face "
                    f"{base.shape[1]}x{base.shape[0]}: no pixel correspondence"
                )
            else:
                variation = benchmark.variation(str(v["attribute"]), str(v["value"]))
                mask = masks.mask(face, variation) if face is not None else None
                loc = edit_locality(base, edit, mask, limits.pixel_tol)
                row.update(
                    mask_source=masks.name if mask is not None else "none",
                    mask_share=loc.mask_share,
                    diff_inside=loc.diff_inside,
                    diff_outside=loc.diff_outside,
                    diff_all=loc.diff_all,
                    gap=loc.gap,
                    ratio=loc.ratio,
                    changed_outside=loc.changed_outside,
                    leak=loc.leak,
                    locality_pass=loc.passes(limits),
                )
                if mask is None:
                    row["reason"] = "no mask for this generator (whole-image change only)"
        rows.append(row)
    return rows


def build_locality(config: Config) -> Path:
    """Measure every variation's edit locality; write ``<paths.qa>/locality.parquet``."""
    root = project_root()
    out_dir = config_output(config, "qa")
    data = data_root(root, config.paths.data)
    faces_dir, var_dir = config_path(config, "faces"), config_path(config, "variations")
    faces = schemas.read_table(faces_dir / "faces.parquet", schemas.FACES)
    variations = schemas.read_table(var_dir / "variations.parquet", schemas.VARIATIONS)
    benchmark = load_benchmark(config.protocol)
    limits = thresholds(config.qa)
    with OutputLock(root, out_dir):
        masks = mask_source(config)
        table = locality_table(
            faces,
            variations,
            faces_dir,
            var_dir,
            benchmark,
            masks,
            limits,
            data,
            workers=config.qa.workers,
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / LOCALITY_FILE
        schemas.write_table(table, path, LOCALITY)
    judged = table["locality_pass"].notna()
    if judged.any():
        n_fail = int((~table.loc[judged, "locality_pass"].astype(bool)).sum())
        log.info(
            "locality: %d edits measured (%s masks), %d fail (mean change outside the mask "
            "%.4f, inside %.4f)",
            int(judged.sum()),
            masks.name,
            n_fail,
            float(table["diff_outside"].mean()),
            float(table["diff_inside"].mean()),
        )
    else:
        log.info(
            "locality: %d edits, no masks (%s): whole-image change only", len(table), masks.name
        )
    if table.empty and benchmark.variations:  # a protocol without edits (tasks alone) has none
        raise StylisticBiasError(f"{var_dir / 'variations.parquet'}: no variations to measure")
    return path
