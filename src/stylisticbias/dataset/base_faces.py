"""Read and verify the base-face table (``faces.parquet``): shared by the build and the importer.

Its own module so that :mod:`stylisticbias.dataset.build` (which dispatches to the importer) and
:mod:`stylisticbias.dataset.importer.stage` (which re-checks the base faces) both import it
without importing each other.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from PIL import Image, UnidentifiedImageError

from stylisticbias import schemas
from stylisticbias.benchmark import Benchmark
from stylisticbias.dataset.regular_files import open_regular
from stylisticbias.dataset.render_cache import sha256_file
from stylisticbias.errors import StylisticBiasError
from stylisticbias.output_paths import safe_member


def load_base_faces(
    faces_dir: Path, benchmark: Benchmark | None = None, data: Path | None = None
) -> pd.DataFrame:
    """Read ``faces.parquet`` and check every ok image exists, matches its sha256 and decodes.

    With ``benchmark``, also that every demographic value is one of the benchmark's.
    """
    faces = schemas.read_table(faces_dir / "faces.parquet", schemas.FACES)
    data = faces_dir.resolve().parent if data is None else data
    if benchmark is not None:
        schemas.check_demographics(faces, benchmark.demographics, faces_dir / "faces.parquet")
    for row in faces.itertuples():
        if row.status != "ok":
            continue
        path = safe_member(faces_dir, str(row.path), f"faces.parquet row {row.Index}", data)
        if not path.exists():
            raise StylisticBiasError(
                f"{path}: missing image of face {row.face_id} (faces.parquet row {row.Index})"
            )
        where = f"{path} (face {row.face_id}, faces.parquet row {row.Index})"
        if sha256_file(path, where) != row.sha256:  # a FIFO or device: refused, unopened
            raise StylisticBiasError(
                f"{path}: corrupt image of face {row.face_id}: sha256 differs from faces.parquet; "
                "re-run the faces stage (dvc repro faces)"
            )
        try:
            with open_regular(path, where) as fh, Image.open(fh) as im:
                im.verify()
        except (UnidentifiedImageError, OSError) as exc:
            raise StylisticBiasError(
                f"{path}: image of face {row.face_id} does not decode ({exc})"
            ) from None
    return faces
