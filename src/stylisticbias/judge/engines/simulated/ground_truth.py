"""Ground truth for calibration: the exact expected phi and delta under the planted effects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, Benchmark
from stylisticbias.judge.engines.simulated.model import format_shift, simulated_logits
from stylisticbias.judge.engines.simulated.planted import (
    load_planted,
    model_knobs,
    planted_source,
    selected_scenarios,
)

_GROUPING = ["category", "attribute", "value", "age", "gender", "ethnicity", "body_type"]


def image_attrs(faces_df: pd.DataFrame, variations_df: pd.DataFrame) -> pd.DataFrame:
    """One row per image (base faces, then variations): ids, ``is_base`` and grouping columns."""
    demo = list(DEMOGRAPHIC_AXES)
    f = faces_df[["image_id", "face_id", *demo]].copy()
    f["is_base"] = True
    for c in ("category", "attribute", "value"):
        f[c] = None
    v = variations_df[["image_id", "face_id", "category", "attribute", "value", *demo]].copy()
    v["is_base"] = False
    cols = ["image_id", "face_id", "is_base", *_GROUPING]
    return pd.concat([f[cols], v[cols]], ignore_index=True)


def planted_truth(
    benchmark: Benchmark,
    faces_df: pd.DataFrame,
    variations_df: pd.DataFrame,
    model_cfg: Mapping[str, Any],
    *,
    planted: str | Path | Mapping[str, Any] | None = None,
    orderings: Sequence[int] | None = None,
    scenario_ids: Sequence[int] | None = None,
) -> pd.DataFrame:
    """The TRUE expected phi and delta per image x scenario under the planted effects.

    One row per image of ``faces_df`` and ``variations_df`` (rows with ``status == "ok"`` when a
    ``status`` column is present) x scenario. Columns:

    - ``model``, ``image_id``, ``face_id``, ``is_base``;
    - grouping columns ``category``, ``attribute``, ``value`` (null on base faces), ``age``,
      ``gender``, ``ethnicity``, ``body_type``; ``scenario_id``, ``scenario_category``;
    - ``logit_true``: the image's logit L including its seeded noise draw;
    - ``phi_true``: E[phi] for this image, i.e. the mean over the judged orderings of
      P(positive | valid, ordering) = sigmoid(L + format shift). This is exactly the expected
      value of the paper's estimator given >= 1 valid response (invalid answers are independent
      of the ordering), and equals the exact-decoding phi;
    - ``delta_true``: ``phi_true`` minus its base face's ``phi_true`` (null on base faces or when
      the base face is absent);
    - ``phi_planted`` / ``delta_planted``: the same without the per-image noise (the planted
      signal itself; with small ``noise_sd`` the two are close).

    ``model_cfg`` is the model's config (``effect_scale``, ``noise_sd``, ``seed``, ...);
    ``planted`` overrides its planted-effects file; ``orderings`` defaults to all four and
    ``scenario_ids`` to all scenarios (pass ``judge.scenarios`` of a subset run).
    """
    pe = load_planted(planted or planted_source(model_cfg, None), benchmark)
    knobs = model_knobs(model_cfg, pe)
    ok_f = faces_df[faces_df["status"] == "ok"] if "status" in faces_df else faces_df
    ok_v = (
        variations_df[variations_df["status"] == "ok"]
        if "status" in variations_df
        else variations_df
    )
    img = image_attrs(ok_f, ok_v)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].to_dict(
        "records"
    )
    for a in attrs:
        if a["attribute"] is not None and pd.isna(a["attribute"]):
            a["attribute"] = None
    ids = img["image_id"].tolist()
    js = list(orderings) if orderings is not None else [o.id for o in benchmark.orderings]
    shift = format_shift(benchmark, js, knobs)
    out = []
    for noise in (True, False):
        L = simulated_logits(ids, attrs, pe, knobs, noise=noise)
        phi = expit(L[:, :, None] + shift[None, None, :]).mean(axis=2)
        out.append((L, phi))
    S = len(benchmark.scenarios)
    df = img.loc[img.index.repeat(S)].reset_index(drop=True)
    df.insert(0, "model", str(model_cfg.get("name", "simulated")))
    df["scenario_id"] = np.tile([s.id for s in benchmark.scenarios], len(img))
    df["scenario_category"] = np.tile([s.category for s in benchmark.scenarios], len(img))
    df["logit_true"] = out[0][0].ravel()
    df["phi_true"] = out[0][1].ravel()
    df["phi_planted"] = out[1][1].ravel()
    base = df.loc[df["is_base"], ["face_id", "scenario_id", "phi_true", "phi_planted"]]
    merged = df[["face_id", "scenario_id"]].merge(
        base, on=["face_id", "scenario_id"], how="left", suffixes=("", "_b")
    )
    df["delta_true"] = np.where(
        df["is_base"], np.nan, df["phi_true"] - merged["phi_true"].to_numpy()
    )
    df["delta_planted"] = np.where(
        df["is_base"], np.nan, df["phi_planted"] - merged["phi_planted"].to_numpy()
    )
    if scenario_ids is not None:
        keep = selected_scenarios(benchmark, {"scenarios": list(scenario_ids)})
        df = df[df["scenario_id"].isin(keep)].reset_index(drop=True)
    return df
