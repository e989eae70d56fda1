"""The dataset's images as the score partition joins them, and the partition's row order.

:func:`image_table` indexes the faces and variations tables once (each image's row, its face,
whether it is a base face, its string columns), before the judgments' cells are needed: the
stage builds it while the judgments are still being read. :func:`row_order` puts the cells in
the partition's order -- by image id (string order), then scenario -- without sorting the rows
where each image's cells are one run (as the reader hands them over): the runs are permuted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from stylisticbias.benchmark import DEMOGRAPHIC_AXES
from stylisticbias.scores_columnar.arrays import as_numpy, as_strings, compute

#: the string columns of the partition that come from the dataset tables, in the file's order
IMAGE_COLUMNS = ("face_id", "category", "attribute", "value", *DEMOGRAPHIC_AXES)


@dataclass(frozen=True)
class ImageTable:
    """Faces and variations as one table of image metadata, one row per image: ``rows`` maps an
    image id to its row; ``is_base`` and ``face`` (a code per face id, ``faces`` of them) are
    per row, and each of the :data:`IMAGE_COLUMNS` is ``codes[name]`` (per row, -1 for null:
    ``category``, ``attribute`` and ``value`` on base faces) into ``values[name]``."""

    rows: dict[str, int]
    is_base: np.ndarray
    face: np.ndarray
    faces: int
    codes: dict[str, np.ndarray]
    values: dict[str, pa.Array]

    def lookup(self, images: Sequence[str]) -> np.ndarray:
        """The row of each of ``images`` (-1: not in the dataset)."""
        rows = self.rows
        return np.fromiter((rows.get(i, -1) for i in images), dtype=np.int64, count=len(images))


def image_table(faces: pa.Table, variations: pa.Table) -> ImageTable | None:
    """The images of the faces and variations tables, or ``None`` when a column is missing or
    null, an image is in both tables or twice, or a face is twice in the faces table."""
    demo = list(DEMOGRAPHIC_AXES)
    try:
        f = faces.select(["image_id", "face_id", *demo])
        v = variations.select(["image_id", "face_id", "category", "attribute", "value", *demo])
    except KeyError:
        return None
    fc = {c: as_strings(f.column(c)) for c in f.column_names}
    vc = {c: as_strings(v.column(c)) for c in v.column_names}
    if any(a.null_count for a in (*fc.values(), *vc.values())):
        return None
    ids = [*fc["image_id"].to_pylist(), *vc["image_id"].to_pylist()]
    rows = {image: i for i, image in enumerate(ids)}
    if len(rows) != len(ids):
        return None
    none = pa.nulls(f.num_rows, pa.large_string())
    codes, values = {}, {}
    for c in IMAGE_COLUMNS:
        encoded = compute("dictionary_encode", pa.concat_arrays([fc.get(c, none), vc[c]]))
        codes[c] = as_numpy(encoded.indices, fill=-1)
        values[c] = encoded.dictionary
    face = codes["face_id"].astype(np.int64)
    if f.num_rows and int(np.bincount(face[: f.num_rows]).max()) > 1:
        return None  # a face with two base images
    is_base = np.zeros(len(ids), dtype=np.bool_)
    is_base[: f.num_rows] = True
    return ImageTable(
        rows=rows,
        is_base=is_base,
        face=face,
        faces=len(values["face_id"]),
        codes=codes,
        values=values,
    )


def row_order(images: Sequence[str], image: np.ndarray, scenario: np.ndarray) -> np.ndarray | None:
    """The order that sorts cells by (image id, scenario) -- ``image``: codes into ``images``
    -- or ``None`` where they already are. Where each image's cells are one run, in code order,
    scenarios ascending within it (as :func:`~stylisticbias.scores_columnar.reader.reduce_judgments`
    hands them over), the runs are permuted; otherwise the cells are sorted (stable)."""
    n = len(image)
    if n < 2:
        return None
    by_name = sorted(range(len(images)), key=images.__getitem__)
    step = image[1:].astype(np.int64) - image[:-1]
    runs = bool(np.all((step > 0) | ((step == 0) & (scenario[1:] > scenario[:-1]))))
    if not runs:
        rank = np.empty(len(images), dtype=np.int64)
        rank[by_name] = np.arange(len(images))
        first = rank[image]
        step = first[1:] - first[:-1]
        if bool(np.all((step > 0) | ((step == 0) & (scenario[1:] >= scenario[:-1])))):
            return None
        return np.lexsort((scenario, first))
    counts = np.bincount(image, minlength=len(images))
    starts = np.cumsum(counts) - counts
    present = np.array(by_name, dtype=np.int64)
    present = present[counts[present] > 0]
    if bool(np.all(present[1:] > present[:-1])):
        return None  # the runs are already in string order
    c, s = counts[present], starts[present]
    at = np.cumsum(c) - c  # where each run lands
    return np.repeat(s - at, c) + np.arange(n)
