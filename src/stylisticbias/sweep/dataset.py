"""One dataset build per dataset configuration, shared by the sweep's jobs.

The dataset of a job (faces + variations) depends only on :data:`~.spec.DATASET_KEYS`; jobs that
agree on them (a sweep over judges and seeds) use one build in ``<datasets>/<key>/``, made by
the first job to need it under a blocking lock (the others wait, then reuse it). A job gets the
build as hard links in its own ``data/`` (a copy where links are impossible), so every job
directory is a complete pipeline workspace and no stage ever writes into the shared build.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from stylisticbias.config import dump_params
from stylisticbias.outputs import atomic_dir, atomic_write_text
from stylisticbias.sweep.spec import dataset_key, dataset_params

log = logging.getLogger(__name__)

#: marker of a finished build (written last)
DONE = "dataset.json"
#: the dataset's stage outputs, as named in ``paths``
PARTS = ("faces", "variations")


@contextlib.contextmanager
def blocking_lock(path: Path) -> Iterator[None]:
    """An exclusive ``fcntl`` lock on ``path``, waiting for it (released when a holder dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_dataset(
    params: dict[str, Any],
    datasets: Path,
    build: Callable[[Path, str], None],
) -> Path:
    """The finished build of ``params``' dataset under ``datasets`` (built once, under a lock).

    ``build(params_file, key)`` runs the faces and variations stages on ``params_file``.
    Returns the build's directory ``datasets/<key>``.
    """
    key = dataset_key(params)
    where = datasets / key
    done = where / DONE
    if done.is_file():
        return where
    with blocking_lock(datasets / f".{key}.lock"):
        if done.is_file():  # built while this job waited
            log.info("dataset %s: built by another job", key)
            return where
        where.mkdir(parents=True, exist_ok=True)
        ds_params = dataset_params(params, datasets, key)
        params_file = where / "params.yaml"
        params_file.write_text(dump_params(ds_params), encoding="utf-8")
        log.info("dataset %s: building (faces.n=%s)", key, (params.get("faces") or {}).get("n"))
        build(params_file, key)
        record = {"key": key, "faces": params.get("faces"), "parts": list(PARTS)}
        atomic_write_text(done, json.dumps(record, indent=1, sort_keys=True, default=str))
    return where


def link_tree(src: Path, dst: Path) -> None:
    """Recreate ``src`` at ``dst`` with hard links (copies across file systems)."""

    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    with atomic_dir(dst) as tmp:  # the previous dst stays until the new tree is complete
        shutil.copytree(src, tmp, copy_function=link, dirs_exist_ok=True)


def link_dataset(build_dir: Path, job_params: dict[str, Any]) -> None:
    """Give a job the shared build: ``paths.faces`` / ``paths.variations`` linked to it."""
    paths = job_params["paths"]
    for part in PARTS:
        dst = Path(paths[part])
        marker = dst.parent / f".{dst.name}.dataset"
        if marker.is_file() and marker.read_text(encoding="utf-8") == build_dir.name:
            continue  # resumed job: already linked
        dst.parent.mkdir(parents=True, exist_ok=True)
        link_tree(build_dir / part, dst)
        marker.write_text(build_dir.name, encoding="utf-8")
