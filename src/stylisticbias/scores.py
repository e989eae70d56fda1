"""Preference scores phi per image x scenario and prediction shifts delta per variation.

Paper §3.1/§4.4 and App. C.2: phi_i(x) is the share of *valid* responses that pick the scenario's
POSITIVE pole, over all orderings and seeds (positions and letters are permuted by the orderings;
the pole is not); invalid responses are excluded; delta_i(x_v) = phi_i(x_v) - phi_i(x_b).

Two kinds of judgment rows feed phi (``source=``):

- **drawn** (seed >= 1: ``generate``, ``sampled``, ``simulated``): phi = (# choice == positive)
  / n_valid, with n_valid = # choice in {positive, negative} and n = # responses asked;
- **exact** (seed 0: the answer distribution per ordering j): phi = sum_j p_pos_j /
  sum_j (p_pos_j + p_neg_j) -- the expectation of the paper's estimator when every ordering
  is equally often valid -- with n_valid = K * sum_j (p_pos_j + p_neg_j) the *expected* number of
  valid responses among the K seeds x M orderings the paper would have asked, and n = M * K
  (K = ``k``, the number of seeds of the protocol, 3 by default).

``source="auto"`` (default) uses the drawn rows when the table has any and the exact rows
otherwise, so a ``sampled`` run is scored like the paper (its seed-0 rows stay available with
``source="exact"``). phi is null where n_valid == 0; delta is null on base faces and where either
phi is null or the base face was not judged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark, benchmark_from_config
from stylisticbias.config import get, project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.schemas import (
    FACES,
    JUDGMENTS,
    SCORES,
    VARIATIONS,
    check_demographics,
    read_table,
    validate,
)
from stylisticbias.score_store import write_model_scores

log = logging.getLogger(__name__)

Source = Literal["auto", "drawn", "exact"]
_KEYS = ["model", "image_id", "scenario_id"]


def _phi_drawn(rows: pd.DataFrame) -> pd.DataFrame:
    g = rows.assign(
        _pos=(rows["choice"] == "positive").astype(np.int64),
        _valid=rows["choice"].isin(["positive", "negative"]).astype(np.int64),
    ).groupby(_KEYS, sort=False)
    out = g.agg(pos=("_pos", "sum"), n_valid=("_valid", "sum"), n=("_valid", "size"),
                simulated=("simulated", "any"))  # fmt: skip
    out["phi"] = np.where(
        out["n_valid"] > 0, out["pos"] / out["n_valid"].where(out["n_valid"] > 0), np.nan
    )
    out["n_valid"] = out["n_valid"].astype(float)
    return out.drop(columns="pos").reset_index()


def _phi_exact(rows: pd.DataFrame, k: int) -> pd.DataFrame:
    g = rows.assign(_valid=rows["p_pos"] + rows["p_neg"]).groupby(_KEYS, sort=False)
    out = g.agg(pos=("p_pos", "sum"), valid=("_valid", "sum"), m=("p_pos", "size"),
                simulated=("simulated", "any"))  # fmt: skip
    out["phi"] = np.where(
        out["valid"] > 0, out["pos"] / out["valid"].where(out["valid"] > 0), np.nan
    )
    out["phi"] = out["phi"].clip(0.0, 1.0)
    out["n_valid"] = k * out["valid"]
    out["n"] = (k * out["m"]).astype(np.int64)
    return out.drop(columns=["pos", "valid", "m"]).reset_index()


def compute_scores(
    judgments: pd.DataFrame,
    faces: pd.DataFrame,
    variations: pd.DataFrame,
    benchmark: Benchmark,
    *,
    source: Source = "auto",
    k: int = 3,
) -> pd.DataFrame:
    """phi, n_valid, n and delta per (model, image, scenario) -- a ``SCORES`` table.

    ``judgments`` are JUDGMENTS rows (one or more models); ``faces``/``variations`` the dataset
    tables, which supply ``face_id``, ``is_base``, the demographic and attribute columns.
    Judgment images missing from both tables raise :class:`StylisticBiasError`. See the module
    docstring for drawn vs. exact rows, ``source`` and ``k``.
    """
    if source not in ("auto", "drawn", "exact"):
        raise ValueError(f"source: {source!r}; valid: auto, drawn, exact")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    drawn = judgments[judgments["seed"] > 0]
    exact = judgments[judgments["seed"] == 0]
    use = source if source != "auto" else ("drawn" if len(drawn) else "exact")
    phi = _phi_drawn(drawn) if use == "drawn" else _phi_exact(exact, k)

    demo = list(DEMOGRAPHIC_AXES)
    f = faces[["image_id", "face_id", *demo]].assign(
        is_base=True, category=None, attribute=None, value=None
    )
    v = variations[["image_id", "face_id", "category", "attribute", "value", *demo]].assign(
        is_base=False
    )
    meta = pd.concat([f, v], ignore_index=True)
    unknown = sorted(set(phi["image_id"]) - set(meta["image_id"]))
    if unknown:
        raise StylisticBiasError(
            f"judgments: {len(unknown)} image_id(s) not in faces/variations tables, e.g. "
            + ", ".join(unknown[:5])
        )
    df = phi.merge(meta, on="image_id", how="left", validate="many_to_one")
    cat = {s.id: s.category for s in benchmark.scenarios}
    bad = sorted(set(df["scenario_id"]) - set(cat))
    if bad:
        raise StylisticBiasError(f"judgments: unknown scenario_id(s) {bad}; valid: {sorted(cat)}")
    df["scenario_category"] = df["scenario_id"].map(cat)

    base = df.loc[df["is_base"], ["model", "face_id", "scenario_id", "phi"]].rename(
        columns={"phi": "_phi_base"}
    )
    df = df.merge(base, on=["model", "face_id", "scenario_id"], how="left", validate="many_to_one")
    df["delta"] = np.where(df["is_base"], np.nan, df["phi"] - df["_phi_base"])
    cols = list(SCORES.columns)
    df = (
        df[cols]
        .sort_values(["model", "image_id", "scenario_id"], kind="stable")
        .reset_index(drop=True)
    )
    return validate(df, SCORES, "scores")


def write_scores(model_name: str, params: Mapping[str, Any], *, source: Source = "auto") -> Path:
    """Score one model's ``judgments.parquet`` into ``data/scores/model=<model>/`` (Hive)."""
    params = dict(params)

    def path(key: str) -> Path:
        p = Path(get(params, f"paths.{key}"))
        return p if p.is_absolute() else project_root() / p

    judgments_file = path("judgments") / model_name / "judgments.parquet"
    judgments = read_table(judgments_file, JUDGMENTS)
    faces = read_table(path("faces") / "faces.parquet", FACES)
    variations = read_table(path("variations") / "variations.parquet", VARIATIONS)
    benchmark = benchmark_from_config(get(params, "benchmark"))
    check_demographics(faces, benchmark.demographics, path("faces") / "faces.parquet")
    check_demographics(
        variations, benchmark.demographics, path("variations") / "variations.parquet"
    )
    k = len(get(params, "judge").get("seeds", [1, 2, 3])) or 1
    scores = compute_scores(judgments, faces, variations, benchmark, source=source, k=k)
    out = write_model_scores(scores, path("scores"), model_name)
    n_null = int(scores["phi"].isna().sum())
    log.info(
        "%s: %d scores (%d images x scenarios, %d with no valid response) -> %s",
        model_name,
        len(scores),
        scores["image_id"].nunique(),
        n_null,
        out,
    )
    return out
