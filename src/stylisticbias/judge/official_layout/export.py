"""Our drawn judgments written in the released code's raw layout (:mod:`.layout`), so that the
released evaluation scripts read our results as they read their own, and the export imports
back without loss.

What the released scripts rely on, and how the export meets it:

* the file name carries the index into the released ``judgement_scenarios.json``
  (:attr:`~stylisticbias.benchmark.released.ReleasedSpec.scenario_order`), not our id;
* the base image's folder is named like the face's folder (``evaluate_mllm_outputs.py`` takes
  that folder, else the first sorted one, as every face's base);
* a variation's ``characteristics`` are ``{"base": "<face>.png", "variation": {key: value},
  "prompt": ...}`` with the value spelt as the released ``variation_features.json`` spells it
  (``fashion_style:Formal / Evening wear``; its whitelist and ``variation_name`` match exact
  strings); a base face's are its demographics;
* ``options``, ``prompt`` and ``chosen_option`` carry the released option text
  (``Emotionally stable``) and prompt wording.

A row that an import brought in (``released.parquet``, :data:`.layout.META`) is written back
with its folder names and released fields as they were read, so released -> project ->
released gives the same files.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.official_layout.layout import (
    COLUMNS,
    EXTRA,
    KEYS,
    META,
    UNKNOWN,
    file_name,
    options,
    prompt,
    released_of,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageInfo:
    """Where one of our images goes in the released layout and what its files say about it."""

    folder: str  # the image's folder (a base face's: the face's folder name)
    characteristics: Mapping[str, Any] = field(default_factory=dict)


def characteristics_of(
    faces: pd.DataFrame | None, variations: pd.DataFrame | None, benchmark: Benchmark
) -> dict[str, ImageInfo]:
    """:class:`ImageInfo` per image id: a base face goes to the folder named like its face with
    its demographics; a variation to its image id's folder with ``base``, ``variation`` (the
    released spelling) and ``prompt`` (its edit prompt where the table has one)."""
    out: dict[str, ImageInfo] = {}
    rel = released_of(benchmark)
    keys = {(v.attribute, v.value): v.key for v in benchmark.variations}
    if faces is not None:
        for r in faces[["image_id", "face_id", *DEMOGRAPHIC_AXES]].itertuples(index=False):
            demo = {a: str(x) for a, x in zip(DEMOGRAPHIC_AXES, r[2:])}
            out[str(r[0])] = ImageInfo(str(r[1]), demo)
    if variations is not None:
        has_prompt = "prompt" in variations.columns
        cols = ["image_id", "face_id", "attribute", "value"] + (["prompt"] if has_prompt else [])
        for r in variations[cols].itertuples(index=False):
            key = keys.get((r[2], r[3]))
            if key is None:
                raise StylisticBiasError(
                    f"official export: variation {r[2]}={r[3]!r} of image {r[0]} is not in the "
                    f"protocol {benchmark.name}"
                )
            chars = {
                "base": f"{r[1]}.png",
                "variation": {key: rel.value(key, str(r[3]))},
                "prompt": str(r[4]) if has_prompt and r[4] is not None else "",
            }
            out[str(r[0])] = ImageInfo(str(r[0]), chars)
    return out


def _native(v: Any) -> Any:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, np.generic):
        return v.item()
    return v


def _meta_lookup(meta: pd.DataFrame | None) -> dict[tuple, dict[str, Any]]:
    if meta is None or meta.empty:
        return {}
    cols = list(KEYS) + list(META)
    missing = [c for c in cols if c not in meta.columns]
    if missing:
        raise StylisticBiasError(f"official export: released.parquet lacks column(s) {missing}")
    out = {}
    for rec in meta[cols].itertuples(index=False, name=None):
        k = tuple(_native(x) for x in rec[: len(KEYS)])
        out[k] = dict(zip(META, rec[len(KEYS) :]))
    return out


def export_judgments(
    judgments: pd.DataFrame,
    benchmark: Benchmark,
    root: Path,
    *,
    characteristics: Mapping[str, ImageInfo] | None = None,
    released: pd.DataFrame | None = None,
    timestamp: str | None = None,
) -> int:
    """Write the drawn rows (seed >= 1) of ``judgments`` under
    ``root/<model>/<face folder>/<image folder>/``; returns the number of files.

    ``characteristics``: :func:`characteristics_of` (without it a base image, ``<face>-base``,
    still goes to the face's folder, and files carry no characteristics). ``released``: an
    import's ``released.parquet``; its rows are written back as they were read. Exact rows
    (seed 0: a distribution, no single answer) have no file in this layout and are left out
    with a warning.
    """
    drawn = judgments[judgments["seed"].to_numpy() > 0]
    if len(drawn) < len(judgments):
        log.warning(
            "official export: %d exact row(s) (seed 0) have no single answer; not exported",
            len(judgments) - len(drawn),
        )
    ts = timestamp or datetime.now(UTC).isoformat()
    info = characteristics or {}
    back = _meta_lookup(released)
    cols = list(COLUMNS)
    missing = [c for c in cols if c not in drawn.columns]
    if missing:
        raise StylisticBiasError(f"official export: judgments lack column(s) {missing}")
    rel = released_of(benchmark)
    shown: dict[tuple[int, int], tuple[str, str]] = {}
    prompts: dict[tuple[int, int], str] = {}
    for sc in benchmark.scenarios:
        for o in benchmark.orderings:
            shown[(sc.id, o.id)] = options(benchmark, sc, o)
            prompts[(sc.id, o.id)] = prompt(benchmark, sc, o)
    made: set[Path] = set()
    n = 0
    for rec in drawn[cols].itertuples(index=False, name=None):
        row = {c: _native(v) for c, v in zip(cols, rec)}
        sid, oid = int(row["scenario_id"]), int(row["ordering"])
        if (sid, oid) not in shown:
            raise StylisticBiasError(
                f"official export: scenario {sid} ordering {oid} is not in the protocol "
                f"{benchmark.name}"
            )
        sc = benchmark.scenario(sid)
        image, face = str(row["image_id"]), str(row["face_id"])
        opt_a, opt_b = shown[(sid, oid)]
        old = back.get(tuple(row[k] for k in KEYS))
        if old is not None:  # an imported row: its folders and released fields as read
            face_dir, image_dir = str(old["face_dir"]), str(old["image_dir"])
            doc = {
                "face_image_name": old["face_image_name"],
                "characteristics": json.loads(old["characteristics"]),
                "order": oid,
                "seed": int(row["seed"]),
                "prompt": old["prompt"],
                "timestamp": old["timestamp"],
                "options": {"a": opt_a, "b": opt_b},
                "chosen_option": old["chosen_option"],
            }
        else:
            im = info.get(image)
            face_dir = face
            base_dir = face if image == f"{face}-base" else image
            image_dir = im.folder if im is not None else base_dir
            chosen = {
                "positive": rel.pole(sc.positive),
                "negative": rel.pole(sc.negative),
            }.get(str(row["choice"]), UNKNOWN)
            doc = {
                "face_image_name": f"{image_dir}.png",
                "characteristics": dict(im.characteristics) if im is not None else {},
                "order": oid,
                "seed": int(row["seed"]),
                "prompt": prompts[(sid, oid)],
                "timestamp": ts,
                "options": {"a": opt_a, "b": opt_b},
                "chosen_option": chosen,
            }
        doc["raw_output"] = row["response"] if row["response"] is not None else ""
        doc[EXTRA] = row
        d = root / str(row["model"]) / face_dir / image_dir
        if d not in made:
            d.mkdir(parents=True, exist_ok=True)
            made.add(d)
        name = file_name(image_dir, rel.index_of(sid), oid, int(row["seed"]))
        (d / name).write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
        n += 1
    log.info("official export: %d file(s) under %s", n, root)
    return n
