"""Small synthetic faces/variations tables (with tiny PNGs) for the judge-stage tests."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from stylisticbias.benchmark import Benchmark, benchmark_from_params
from stylisticbias.config import load_params
from stylisticbias.schemas import FACES, VARIATIONS, write_table


def _png(path: Path, seed: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), ((seed * 37) % 256, (seed * 91) % 256, 128)).save(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_tables(
    root: Path, n_faces: int = 4, *, values_per_face: int | None = None
) -> dict[str, Any]:
    """Write faces/variations tables under ``root``; return params pointing at them.

    Every face gets the evaluated variation values that apply to its gender (or the first
    ``values_per_face`` of them), plus one non-evaluated value; one variation is ``refused``.
    """
    params = load_params()  # composed once per process (config.compose keeps compositions)
    bench: Benchmark = benchmark_from_params(params)
    demo = bench.demographics
    faces_dir, var_dir = root / "faces", root / "variations"
    frows, vrows = [], []
    for i in range(n_faces):
        d = {
            "age": demo["age"][i % 3],
            "gender": demo["gender"][i % 2],
            "ethnicity": demo["ethnicity"][i % 5],
            "body_type": demo["body_type"][(i // 2) % 3],
        }
        fid = f"f{i:03d}"
        rel = f"images/{fid}.png"
        frows.append(
            {
                "face_id": fid,
                "image_id": f"{fid}--base",
                **d,
                "generator": "test",
                "prompt": "p",
                "seed": i,
                "path": rel,
                "sha256": _png(faces_dir / rel, i),
                "width": 8,
                "height": 8,
                "status": "ok",
                "reason": None,
                "evaluated": True,
            }
        )
        values = bench.variations_for(d["gender"], evaluated_only=True)[:values_per_face]
        extra = [v for v in bench.variations_for(d["gender"]) if not v.evaluated][:1]
        for j, v in enumerate([*values, *extra]):
            iid = f"{fid}--{v.slug}"
            rel = f"images/{iid}.png"
            status = "refused" if (i == 0 and j == 0) else "ok"
            vrows.append(
                {
                    "image_id": iid,
                    "face_id": fid,
                    "category": v.category,
                    "attribute": v.attribute,
                    "value": v.value,
                    "framing": v.framing,
                    **d,
                    "generator": "test",
                    "prompt": "p",
                    "seed": i * 100 + j,
                    "path": rel if status == "ok" else None,
                    "sha256": _png(var_dir / rel, i * 100 + j) if status == "ok" else None,
                    "width": 8,
                    "height": 8,
                    "status": status,
                    "reason": "refused" if status != "ok" else None,
                    "evaluated": v.evaluated,
                }
            )
    write_table(pd.DataFrame(frows), faces_dir / "faces.parquet", FACES)
    write_table(pd.DataFrame(vrows), var_dir / "variations.parquet", VARIATIONS)
    params["paths"].update(
        data=str(root),
        faces=str(faces_dir),
        variations=str(var_dir),
        judgments=str(root / "judgments"),
        scores=str(root / "scores"),
    )
    params["tracking"] = {
        **params["tracking"],
        "enabled": False,
        "tracking_uri": None,
        "experiment_name": "test",
    }
    params["judge"]["scenarios"] = "all"
    return params


def judge_with(params: dict[str, Any], model: str, **engine: Any) -> dict[str, Any]:
    """Make ``model`` a judged model of ``params`` (its conf/model section, composed with its
    engine) with ``engine`` keys overridden -- a nested section (``lightning``, ``transport``)
    key by key, as a Hydra override would; returns ``params``."""
    from stylisticbias.config import load_group_option

    models = params.setdefault("models", {})
    if model not in models:
        models[model] = load_group_option("model", model)
    section = dict(models[model])
    base = dict(section.get("engine") or {})
    for key, value in engine.items():
        nested = isinstance(value, dict) and isinstance(base.get(key), dict)
        base[key] = {**base[key], **value} if nested else value
    section["engine"] = base
    models[model] = section
    return params
