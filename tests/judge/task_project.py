"""A small task-protocol project for the judge-stage tests: params composed from conf/ for a
task protocol (REFLECT, VIGNETTE) and a faces table of tiny distinct PNGs under a temp root."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import compose
from stylisticbias.dataset.counterfactual_sets import COUNTERFACTUALS, SETS_FILE
from stylisticbias.schemas import FACES, write_table


def _png(path: Path, seed: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    rs = np.random.RandomState(seed)
    Image.fromarray((rs.rand(24, 24, 3) * 255).astype("uint8")).save(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def task_project(
    root: Path,
    experiment: str,
    model: str,
    n_faces: int,
    overrides: Sequence[str] = (),
    sources: int = 0,
) -> dict[str, Any]:
    """Params of ``experiment`` judged by ``model`` (composed from conf/ with ``overrides``)
    and ``n_faces`` faces cycling over the protocol's ethnicity x gender groups (so every block
    of four holds cross-group pairs), written under ``root``. ``sources`` > 0: the faces are
    counterfactual sets of that many source photos (``s0``, ``s1``...; consecutive faces, an
    equal number each), listed in ``counterfactuals.parquet``."""
    params = compose([f"experiment={experiment}", f"model=[{model}]", *overrides])
    demo = benchmark_from_params(params).demographics
    eth, gen = demo["ethnicity"], demo["gender"]
    faces_dir = root / "faces"
    rows = []
    for i in range(n_faces):
        fid = f"f{i:03d}"
        rel = f"images/{fid}.png"
        rows.append(
            {
                "face_id": fid,
                "image_id": f"{fid}--base",
                "age": demo["age"][0],
                "gender": gen[i % len(gen)],
                "ethnicity": eth[(i // len(gen)) % len(eth)],
                "body_type": demo["body_type"][0],
                "generator": "test",
                "prompt": "p",
                "seed": i,
                "path": rel,
                "sha256": _png(faces_dir / rel, i),
                "width": 24,
                "height": 24,
                "status": "ok",
                "reason": None,
                "evaluated": True,
            }
        )
    write_table(pd.DataFrame(rows), faces_dir / "faces.parquet", FACES)
    if sources:
        per = n_faces // sources
        sets = pd.DataFrame(
            {
                "image_id": [r["image_id"] for r in rows],
                "face_id": [r["face_id"] for r in rows],
                "source_id": [f"s{i // per}" for i in range(n_faces)],
                "edit": [f"{r['ethnicity']}-{r['gender']}" for r in rows],
                "mask_pixels": None,
                "changed_inside": None,
                "changed_outside": None,
            }
        )
        write_table(sets, faces_dir / SETS_FILE, COUNTERFACTUALS)
    params["paths"].update(
        data=str(root),
        faces=str(faces_dir),
        variations=str(root / "variations"),
        judgments=str(root / "judgments"),
        scores=str(root / "scores"),
    )
    params["tracking"] = {**params["tracking"], "enabled": False}
    return params
