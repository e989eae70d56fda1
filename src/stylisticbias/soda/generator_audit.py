"""The variation generator's own bias, audited the SODA way from pixels (no model).

Every Δ compares an edit with its base face; if the generator draws the same requested value
differently for different people -- a "formal" outfit darker for older faces, a hair colour
redder for some ethnicities -- that difference is a confound of every Δ. For each edit this
module labels, from the pixels the edit changed:

* ``colour``: the dominant colour bucket of the changed pixels (face edits: pixels whose change
  exceeds ``pixel_tol``; full-body edits, which have no same-framing base: the outfit region,
  the pixels that differ between the face's full-body images);
* ``extent``: the changed share of the image, in tertiles of that value's edits.

Then, per variation value and demographic dimension, each group's label distribution is
compared with the rest of that value's edits: BDS (the mean JS over the two labels) with the
seeded permutation test of :mod:`stylisticbias.soda.metrics` and Benjamini-Hochberg over all
tests (a two-group dimension is tested once). ``<paths.qa>/generator_audit.csv`` holds every
test (the report shows the strongest).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image
from statsmodels.stats.multitest import multipletests

from stylisticbias import schemas
from stylisticbias.config import config_output, config_path, project_root
from stylisticbias.forked import ordered_map
from stylisticbias.output_paths import safe_member
from stylisticbias.outputs import OutputLock, atomic_write_text
from stylisticbias.qa.locality import pixel_change
from stylisticbias.soda.metrics import permutation_seed, permutation_test
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

AUDIT_FILE = "generator_audit.csv"
#: the audit table's columns (also of an empty one: too few faces per group)
AUDIT_COLUMNS = (
    "attribute",
    "value",
    "dimension",
    "group",
    "n_group",
    "n_rest",
    "bds",
    "pval",
    "group_colour",
    "rest_colour",
    "pval_corr",
    "significant",
)
DIMENSIONS = ("age", "gender", "ethnicity", "body_type")
#: colour buckets: achromatic by value, chromatic by hue (degrees, upper bounds)
HUES = (
    (20, "red"),
    (45, "orange_brown"),
    (70, "yellow"),
    (160, "green"),
    (250, "blue"),
    (330, "purple_pink"),
    (360, "red"),
)


#: every bucket's name, alphabetical (a tie of the dominant colour goes to the first)
BUCKETS = tuple(sorted({name for _, name in HUES} | {"white", "grey", "black"}))
#: the bucket (index into :data:`BUCKETS`) of each hue interval of :data:`HUES`
_HUE_BUCKET = np.array([BUCKETS.index(name) for _, name in HUES])
_WHITE, _GREY, _BLACK = (BUCKETS.index(n) for n in ("white", "grey", "black"))


def _bucket_codes(rgb: np.ndarray) -> np.ndarray:
    """The index into :data:`BUCKETS` of each pixel of ``rgb`` (N x 3 uint8)."""
    from matplotlib.colors import rgb_to_hsv

    x = np.asarray(rgb, dtype=np.float64).reshape(-1, 3) / 255.0
    h, s, v = rgb_to_hsv(x).T if len(x) else (np.zeros(0),) * 3
    bounds = np.array([b for b, _ in HUES], dtype=np.float64)
    out = _HUE_BUCKET[np.minimum(np.searchsorted(bounds, h * 360.0, side="right"), len(HUES) - 1)]
    out = np.where(s < 0.15, np.where(v > 0.85, _WHITE, _GREY), out)
    return np.where(v < 0.2, _BLACK, out)


def colour_bucket(rgb: np.ndarray) -> np.ndarray:
    """The colour bucket of each pixel of ``rgb`` (N x 3 uint8) as strings."""
    return np.array(BUCKETS, dtype=object)[_bucket_codes(rgb)]


def dominant_colour(img: np.ndarray, region: np.ndarray, max_pixels: int = 4000) -> str | None:
    """The most common colour bucket of ``img`` over ``region`` (None for an empty region;
    a tie goes to the alphabetically first name).

    Large regions are subsampled on a fixed stride (deterministic)."""
    px = img[region]
    if not len(px):
        return None
    step = max(1, len(px) // max_pixels)
    return BUCKETS[int(np.argmax(np.bincount(_bucket_codes(px[::step]), minlength=len(BUCKETS))))]


def _rgb(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def edit_labels(
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    faces_dir: Path,
    variations_dir: Path,
    pixel_tol: float,
    data: Path | None = None,
    workers: int = 1,
) -> pd.DataFrame:
    """One row per rendered edit: its demographic cell, ``colour`` and ``changed_share``.

    ``workers``: processes labelling faces at once (:func:`~stylisticbias.forked.ordered_map`);
    the table does not depend on it."""
    base_path = {r.face_id: r.path for r in faces.itertuples() if r.status == "ok"}
    ok = variations[variations["status"] == "ok"].sort_values("image_id")
    groups = dict(list(ok.groupby("face_id", sort=True)))

    def face_labels(face_id: Any) -> list[dict[str, Any]]:
        base = None
        if face_id in base_path:
            base = _rgb(safe_member(faces_dir, str(base_path[face_id]), f"face {face_id}", data))
        return _face_labels(base, groups[face_id], variations_dir, pixel_tol, data)

    return pd.DataFrame(
        [r for part in ordered_map(face_labels, list(groups), workers) for r in part]
    )


def _face_labels(
    base: np.ndarray | None,
    group: pd.DataFrame,
    variations_dir: Path,
    pixel_tol: float,
    data: Path | None,
) -> list[dict[str, Any]]:
    """The label rows of one face's rendered edits (``group``)."""
    imgs = {
        r.image_id: _rgb(safe_member(variations_dir, str(r.path), r.image_id, data))
        for r in group.itertuples()
    }
    body = [i for i, r in zip(group["image_id"], group["framing"]) if r == "full_body"]
    outfit = None
    if len(body) >= 2:  # pixels that differ between this face's outfits
        stack = np.stack([imgs[i].astype(np.int16) for i in body])
        outfit = (np.abs(stack - stack[0]).max(axis=(0, 3)) > 255 * pixel_tol) | (
            np.abs(stack - stack[-1]).max(axis=(0, 3)) > 255 * pixel_tol
        )
    rows = []
    for r in group.itertuples():
        img = imgs[r.image_id]
        region = None
        if r.framing == "full_body":
            region = outfit
        elif base is not None and base.shape == img.shape:
            region = pixel_change(base, img) > pixel_tol
        rows.append(
            {
                "image_id": r.image_id,
                "attribute": r.attribute,
                "value": r.value,
                "framing": r.framing,
                **{d: getattr(r, d) for d in DIMENSIONS},
                "colour": dominant_colour(img, region) if region is not None else None,
                "changed_share": float(region.mean()) if region is not None else np.nan,
            }
        )
    return rows


def _extent(df: pd.DataFrame) -> pd.Series:
    """``changed_share`` in tertiles of each value's edits (small / medium / large)."""
    out = pd.Series(None, index=df.index, dtype=object)
    for _, g in df.groupby(["attribute", "value"]):
        x = g["changed_share"].dropna()
        if x.nunique() < 3:
            continue
        lo, hi = np.quantile(x, [1 / 3, 2 / 3])
        out.loc[x.index] = np.where(x <= lo, "small", np.where(x <= hi, "medium", "large"))
    return out


def audit_table(
    labels: pd.DataFrame, n_perm: int, seed: int, alpha: float, min_group: int = 5
) -> pd.DataFrame:
    """Per (value, dimension, group): BDS of the group vs the rest of the value's edits."""
    if labels.empty:  # no edits (a protocol of tasks alone): nothing to audit
        return pd.DataFrame(columns=list(AUDIT_COLUMNS))
    labels = labels.copy()
    labels["extent"] = _extent(labels)
    rows = []
    for (attr, value), g in labels.groupby(["attribute", "value"], sort=True):
        for dim in DIMENSIONS:
            groups = sorted(g[dim].unique())
            if len(groups) == 2:  # group vs rest is the same test twice: keep the first
                groups = groups[:1]
            for group in groups:
                inside, rest = g[g[dim] == group], g[g[dim] != group]
                if len(inside) < min_group or len(rest) < min_group:
                    continue
                a = {k: [None if pd.isna(x) else x for x in rest[k]] for k in ("colour", "extent")}
                b = {
                    k: [None if pd.isna(x) else x for x in inside[k]] for k in ("colour", "extent")
                }
                obs, p = permutation_test(
                    a, b, n_perm, permutation_seed(seed, "audit", attr, value, dim, str(group))
                )
                if np.isnan(obs):
                    continue
                top = inside["colour"].mode()
                rows.append(
                    {
                        "attribute": attr,
                        "value": value,
                        "dimension": dim,
                        "group": str(group),
                        "n_group": len(inside),
                        "n_rest": len(rest),
                        "bds": obs,
                        "pval": p,
                        "group_colour": str(top.iloc[0]) if len(top) else None,
                        "rest_colour": str(rest["colour"].mode().iloc[0])
                        if rest["colour"].notna().any()
                        else None,
                    }
                )
    out = pd.DataFrame(rows, columns=list(AUDIT_COLUMNS[:-2]))
    if out.empty:
        return pd.DataFrame(columns=list(AUDIT_COLUMNS))
    out["pval_corr"] = multipletests(out["pval"], method="fdr_bh")[1]
    out["significant"] = out["pval_corr"] < alpha
    return out.sort_values(["pval_corr", "bds"], ascending=[True, False], kind="stable")


def build_generator_audit(config: Config) -> Path:
    """The ``generator_audit`` stage: ``<paths.qa>/generator_audit.csv``."""
    spec = config.qa
    root = project_root()
    out_dir = config_output(config, "qa")
    faces_dir, var_dir = config_path(config, "faces"), config_path(config, "variations")
    faces = schemas.read_table(faces_dir / "faces.parquet", schemas.FACES)
    variations = schemas.read_table(var_dir / "variations.parquet", schemas.VARIATIONS)
    labels = edit_labels(
        faces, variations, faces_dir, var_dir, float(spec.locality.pixel_tol), workers=spec.workers
    )
    audit = spec.audit
    table = audit_table(labels, int(audit.n_perm), int(config.seed), float(audit.alpha))
    with OutputLock(root, out_dir / "audit"):
        path = out_dir / AUDIT_FILE
        atomic_write_text(
            path, table.to_csv(index=False, float_format="%.10g", lineterminator="\n")
        )
    n_sig = int(table["significant"].sum()) if not table.empty else 0
    log.info(
        "generator audit: %d tests, %d significant after BH at %.2g",
        len(table),
        n_sig,
        float(audit.alpha),
    )
    return path
