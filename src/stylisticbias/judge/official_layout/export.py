"""Our drawn judgments written in the released code's raw layout (:mod:`.layout`), so that the
released evaluation scripts run on our results and the export imports back without loss."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.official_layout.layout import COLUMNS, EXTRA, UNKNOWN, file_name

log = logging.getLogger(__name__)


def characteristics_of(
    faces: pd.DataFrame | None, variations: pd.DataFrame | None, benchmark: Benchmark
) -> dict[str, dict[str, Any]]:
    """``characteristics`` per image id as the released code's metadata holds them: the
    demographics and, for a variation, ``variation: {<feature key>: <value>}``."""
    out: dict[str, dict[str, Any]] = {}
    keys = {(v.attribute, v.value): v.key for v in benchmark.variations}
    if faces is not None:
        for r in faces[["image_id", *DEMOGRAPHIC_AXES]].itertuples(index=False):
            out[str(r[0])] = {a: str(x) for a, x in zip(DEMOGRAPHIC_AXES, r[1:])}
    if variations is not None:
        cols = ["image_id", "attribute", "value", *DEMOGRAPHIC_AXES]
        for r in variations[cols].itertuples(index=False):
            d = {a: str(x) for a, x in zip(DEMOGRAPHIC_AXES, r[3:])}
            d["variation"] = {keys.get((r[1], r[2]), str(r[1])): str(r[2]).lower()}
            out[str(r[0])] = d
    return out


def _native(v: Any) -> Any:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, np.generic):
        return v.item()
    return v


def export_judgments(
    judgments: pd.DataFrame,
    benchmark: Benchmark,
    root: Path,
    *,
    characteristics: Mapping[str, Mapping[str, Any]] | None = None,
    timestamp: str | None = None,
) -> int:
    """Write the drawn rows (seed >= 1) of ``judgments`` under ``root/<model>/<face>/<image>/``;
    returns the number of files. Exact rows (seed 0: a distribution, no single answer) have no
    file in this layout and are left out with a warning."""
    drawn = judgments[judgments["seed"].to_numpy() > 0]
    if len(drawn) < len(judgments):
        log.warning(
            "official export: %d exact row(s) (seed 0) have no single answer; not exported",
            len(judgments) - len(drawn),
        )
    ts = timestamp or datetime.now(UTC).isoformat()
    chars = characteristics or {}
    cols = list(COLUMNS)
    missing = [c for c in cols if c not in drawn.columns]
    if missing:
        raise StylisticBiasError(f"official export: judgments lack column(s) {missing}")
    shown = {
        (sc.id, o.id): benchmark.options_shown(sc, o)
        for sc in benchmark.scenarios
        for o in benchmark.orderings
    }
    prompts: dict[tuple[int, int], str] = {}
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
        if (sid, oid) not in prompts:
            prompts[(sid, oid)] = benchmark.forced_choice_prompt(
                benchmark.scenario(sid), benchmark.ordering(oid)
            )
        opt_a, opt_b = shown[(sid, oid)][:2]
        sc = benchmark.scenario(sid)
        chosen = {"positive": sc.pole("positive"), "negative": sc.pole("negative")}.get(
            str(row["choice"]), UNKNOWN
        )
        image, face = str(row["image_id"]), str(row["face_id"])
        d = root / str(row["model"]) / face / image
        if d not in made:
            d.mkdir(parents=True, exist_ok=True)
            made.add(d)
        doc = {
            "face_image_name": f"{image}.png",
            "characteristics": dict(chars.get(image, {})),
            "order": oid,
            "seed": int(row["seed"]),
            "prompt": prompts[(sid, oid)],
            "timestamp": ts,
            "options": {"a": opt_a, "b": opt_b},
            "chosen_option": chosen,
            "raw_output": row["response"] if row["response"] is not None else "",
            EXTRA: row,
        }
        (d / file_name(image, sid, oid, int(row["seed"]))).write_text(
            json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8"
        )
        n += 1
    log.info("official export: %d file(s) under %s", n, root)
    return n
