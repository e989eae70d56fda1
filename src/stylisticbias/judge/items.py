"""The images a judge run covers, checked before anything is judged.

Every manifest path must stay inside its table's directory (absolute paths, ``..`` and symlinks
that leave it are refused, never opened), and -- on request -- every image's bytes must match
the manifest's sha256. ``qa.policy=exclude`` leaves out the edits that failed a QA check.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, load_benchmark
from stylisticbias.config import project_root
from stylisticbias.dataset.regular_files import check_regular
from stylisticbias.dataset.render_cache import sha256_file
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.output_paths import data_root, safe_member
from stylisticbias.qa.checks import qa_exclusions
from stylisticbias.schemas import FACES, VARIATIONS, check_demographics, read_table
from stylisticbias.spec import Config
from stylisticbias.spec.sections import IMAGE_SETS, PathsSpec

log = logging.getLogger(__name__)


def build_items(
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    faces_dir: str | Path,
    variations_dir: str | Path,
    *,
    images: str = "evaluated",
) -> list[ImageItem]:
    """The images a judge run covers, sorted by ``image_id``.

    Base faces and variations with ``status == "ok"``; variations only where ``evaluated`` when
    ``images == "evaluated"`` (the paper's 34-value whitelist), all of them when ``"all"``. Paths
    in the tables are relative to the table's directory and become absolute here. ``attrs`` holds
    the demographic columns and, for variations, ``category``/``attribute``/``value``/``framing``;
    ``sha256`` the manifest's hash of the image bytes.
    """
    if images not in IMAGE_SETS:
        raise StylisticBiasError(f"judge.images: {images!r}; valid: {', '.join(IMAGE_SETS)}")
    faces_dir, variations_dir = Path(faces_dir), Path(variations_dir)
    items: list[ImageItem] = []
    demo = list(DEMOGRAPHIC_AXES)
    f = faces[faces["status"] == "ok"]
    for r in f.itertuples(index=False):
        attrs: dict[str, Any] = {a: getattr(r, a) for a in demo}
        attrs.update(category=None, attribute=None, value=None, framing="face")
        path = str(faces_dir / r.path)
        items.append(ImageItem(r.image_id, r.face_id, path, True, attrs, _sha(r.sha256)))
    v = variations[variations["status"] == "ok"]
    if images == "evaluated":
        v = v[v["evaluated"].astype(bool)]
    for r in v.itertuples(index=False):
        attrs = {a: getattr(r, a) for a in demo}
        attrs.update(category=r.category, attribute=r.attribute, value=r.value, framing=r.framing)
        path = str(variations_dir / r.path)
        items.append(ImageItem(r.image_id, r.face_id, path, False, attrs, _sha(r.sha256)))
    items.sort(key=lambda it: it.image_id)
    ids = [it.image_id for it in items]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise StylisticBiasError(f"faces/variations tables share image_id(s) {dup}")
    return items


def _sha(value: Any) -> str:
    """A manifest's sha256 cell as a string ("" when missing)."""
    return value if isinstance(value, str) else ""


def stage_path(paths: PathsSpec, key: str) -> Path:
    """The ``paths.<key>`` directory, relative paths taken from the project root."""
    p = Path(getattr(paths, key))
    return p if p.is_absolute() else project_root() / p


def load_tables(
    paths: PathsSpec, benchmark: Benchmark
) -> tuple[pd.DataFrame, pd.DataFrame, Path, Path]:
    """Read and validate the faces and variations tables; returns their directories too."""
    faces_dir, var_dir = stage_path(paths, "faces"), stage_path(paths, "variations")
    faces = read_table(faces_dir / "faces.parquet", FACES)
    variations = read_table(var_dir / "variations.parquet", VARIATIONS)
    demo = benchmark.demographics
    check_demographics(faces, demo, faces_dir / "faces.parquet")
    check_demographics(variations, demo, var_dir / "variations.parquet")
    return faces, variations, faces_dir, var_dir


def judge_items(
    config: Config, benchmark: Benchmark | None = None, *, verify: bool = False
) -> list[ImageItem]:
    """The images a judge run covers (see :func:`build_items`).

    ``benchmark`` is the stage's protocol, resolved once by the caller (None: the one
    ``config.protocol`` names).

    Every manifest path must stay inside its table's directory (absolute paths, ``..`` and
    symlinks that leave it are refused, never opened). With ``verify``, every image's bytes are
    also checked against the manifest's sha256 (:func:`verify_images`).
    """
    benchmark = benchmark if benchmark is not None else load_benchmark(config.protocol)
    faces, variations, faces_dir, var_dir = load_tables(config.paths, benchmark)
    items = build_items(faces, variations, faces_dir, var_dir, images=config.judge.images)
    excluded = qa_exclusions(config)  # qa.policy=exclude: edits that failed a QA check
    if excluded:
        log.warning(
            "qa.policy=exclude: %d failing edit(s) are not judged (data/qa/summary.json)",
            sum(it.image_id in excluded for it in items),
        )
        items = [it for it in items if it.image_id not in excluded]
    shas: dict[str, str] = {}
    data = data_root(project_root(), config.paths.data)
    for name, table, base in (
        ("faces.parquet", faces, faces_dir),
        ("variations.parquet", variations, var_dir),
    ):
        ok = table[table["status"] == "ok"]
        for idx, iid, rel, sha in zip(ok.index, ok["image_id"], ok["path"], ok["sha256"]):
            safe_member(base, str(rel), f"{base / name} row {idx} ({iid})", data)
            shas[str(iid)] = str(sha)
    if verify:
        verify_images(items, shas)
    return items


def verify_images(items: list[ImageItem], shas: Mapping[str, str]) -> None:
    """Raise naming the first image that is missing, not a regular file (a FIFO, a device, a
    directory: refused without opening it) or whose bytes differ from its sha256."""
    for it in items:
        path = Path(it.path)
        try:
            check_regular(path, f"image {it.image_id} (listed in the manifest)")
        except (FileNotFoundError, NotADirectoryError):
            raise StylisticBiasError(
                f"{path}: missing image {it.image_id} (listed in the manifest)"
            ) from None
        except OSError as exc:
            raise StylisticBiasError(
                f"{path}: image {it.image_id} cannot be read ({exc.strerror or exc})"
            ) from None
        if sha256_file(path) != shas.get(it.image_id):
            raise StylisticBiasError(
                f"{path}: image {it.image_id} no longer matches the manifest's sha256; "
                "re-run the stage that made it (dvc repro faces / variations) -- nothing judged"
            )
