"""Tables beyond the paper's: SBS profiles per model (Figs. 3-6), Pareto (Fig. 2), cross-model
variance (Fig. 7), model-pair regressions (Fig. 8), profile agreement."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from stylisticbias.analysis.bootstrap import face_weights
from stylisticbias.analysis.metrics import SBS_COLUMNS, sbs
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.structure import (
    cross_model_variance,
    model_pair_regressions,
    pareto,
    profile_agreement,
)
from stylisticbias.benchmark import Benchmark

log = logging.getLogger(__name__)

ALL = "All"  # the pooled-over-models rows

#: :func:`~stylisticbias.analysis.metrics.sbs`'s generic columns -> the table vocabulary
#: (:mod:`stylisticbias.analysis.table_registry`).
SBS_VOCABULARY: dict[str, str] = {"effect": "sbs", "abs_effect": "abs_sbs"}


def _sbs_models(
    delta: pd.DataFrame, by: list[str], faces: pd.Index, s: AnalysisSettings, w: np.ndarray | None
) -> pd.DataFrame:
    """SBS per model x ``by`` and pooled over models (model = All), one correction family."""
    kw = dict(**s.sbs_kwargs(), faces=faces, weights=w)
    per = sbs(delta, ["model", *by], **kw)
    pooled = sbs(delta, by, **kw)
    pooled.insert(0, "model", ALL)
    out = pd.concat([per.astype({"model": str}), pooled], ignore_index=True)
    return out


def beyond(
    delta: pd.DataFrame, faces: pd.Index, benchmark: Benchmark, s: AnalysisSettings
) -> dict[str, pd.DataFrame]:
    """All beyond-the-paper tables that come from the score rows, keyed by file stem."""
    w = face_weights(len(faces), s.n_resamples, s.seed) if s.n_resamples else None
    return beyond_from_sbs(
        {key: _sbs_models(delta, list(by), faces, s, w) for key, by in SBS_GROUPINGS.items()},
        benchmark,
        s,
        halves=None if s.official else half_profiles(delta, faces),
    )


#: the profiles the cross-model agreement reads, per half of the faces (:func:`half_profiles`)
HALF_GROUPINGS: dict[str, tuple[str, ...]] = {
    "scenario": ("scenario_id",),
    "variation": ("attribute", "value"),
}


def half_profiles(delta: pd.DataFrame, faces: pd.Index) -> dict[str, pd.DataFrame]:
    """Per model, the SBS profiles (:data:`HALF_GROUPINGS`) on each half of the faces.

    Half ``h`` holds the faces at even (0) / odd (1) positions of the analysis' sorted face
    index ``faces``, so two models' profiles from different halves share no face and no photo:
    their correlation is free of the sampling noise the models see in common (the agreement and
    the model-pair regressions cross-fit them, :mod:`stylisticbias.analysis.structure`).
    Columns ``model, half, <grouping>, effect``.
    """
    pos = faces.get_indexer(delta["face_id"].astype(str))
    out = {}
    for key, by in HALF_GROUPINGS.items():
        parts = []
        for h in (0, 1):
            d = delta[(pos % 2 == h) & (pos >= 0)]
            if d.empty:
                continue
            t = sbs(d, ["model", *by], n_resamples=0, test=False, faces=faces)
            t = t.astype({"model": str})[["model", *by, "effect"]]
            t.insert(1, "half", h)
            parts.append(t)
        out[key] = (
            pd.concat(parts, ignore_index=True)
            if parts
            else pd.DataFrame(columns=["model", "half", *by, "effect"])
        )
    return out


#: the groupings of the SBS profile tables (per model and pooled over models)
SBS_GROUPINGS: dict[str, tuple[str, ...]] = {
    "scenario": ("scenario_id",),
    "scenario_category": ("scenario_category",),
    "category": ("category",),
    "variation": ("attribute", "value"),
}


def beyond_from_sbs(
    sbs_tables: dict[str, pd.DataFrame],
    benchmark: Benchmark,
    s: AnalysisSettings,
    halves: dict[str, pd.DataFrame] | None = None,
) -> dict[str, pd.DataFrame]:
    """The beyond-the-paper tables from the SBS frames of :data:`SBS_GROUPINGS` (per model
    rows, then the pooled ``model = All`` rows, as :func:`_sbs_models` makes them).

    ``halves`` (:func:`half_profiles`; default definitions): the model-pair regressions and
    the profile agreement are cross-fitted on face halves; None (``official``): on the
    full-sample profiles, as the paper's code."""
    out: dict[str, pd.DataFrame] = {}

    scen = pd.DataFrame(
        [(x.id, x.category, x.positive, x.negative) for x in benchmark.scenarios],
        columns=["scenario_id", "scenario_category", "positive", "negative"],
    )
    by_s = sbs_tables["scenario"].merge(scen, on="scenario_id", how="left")
    out["sbs_by_scenario"] = by_s[
        ["model", "scenario_id", "scenario_category", "positive", "negative", *SBS_COLUMNS]
    ].rename(columns=SBS_VOCABULARY)
    out["sbs_by_scenario_category_model"] = sbs_tables["scenario_category"].rename(
        columns=SBS_VOCABULARY
    )
    out["sbs_by_category_model"] = sbs_tables["category"].rename(columns=SBS_VOCABULARY)
    by_v = sbs_tables["variation"].copy()
    lut = {(v.attribute, v.value): v for v in benchmark.variations}
    by_v.insert(1, "category", [lut[(a, v)].category for a, v in zip(by_v.attribute, by_v.value)])
    by_v.insert(2, "variation", [lut[(a, v)].label for a, v in zip(by_v.attribute, by_v.value)])
    out["sbs_by_variation_model"] = by_v.rename(columns=SBS_VOCABULARY)

    # Fig. 2: per model, and "All" = |SBS| averaged over models
    per = by_v[by_v.model != ALL]
    frames = []
    for m, g in per.groupby("model", sort=True):
        d, k = pareto(g[["variation", "category", "abs_effect"]], share=s.pareto_share)
        d.insert(0, "model", m)
        d["n_variations_threshold"] = k
        frames.append(d)
    avg = per.groupby(["category", "variation"], as_index=False)["abs_effect"].mean()
    d, k = pareto(avg, share=s.pareto_share)
    d.insert(0, "model", ALL)
    d["n_variations_threshold"] = k
    frames.append(d)
    out["pareto"] = pd.concat(frames, ignore_index=True).rename(
        columns={"abs_effect": "abs_sbs", "cum_abs_effect": "cum_abs_sbs"}
    )

    per_s = by_s[by_s.model != ALL][["model", "scenario_id", "effect"]]
    cmv = cross_model_variance(per_s, ddof=s.variance_ddof, quantile=s.disagreement_quantile)
    out["cross_model_variance"] = cmv.merge(scen, on="scenario_id", how="left")[
        [
            "scenario_id",
            "scenario_category",
            "positive",
            "negative",
            "variance",
            "sd",
            "mean_effect",
            "n_models",
            "top_quartile",
        ]
    ].rename(columns={"mean_effect": "mean_sbs"})
    half_s = half_v = None
    if halves is not None:
        half_s = halves["scenario"][["model", "half", "scenario_id", "effect"]]
        hv = halves["variation"]
        half_v = hv.assign(
            variation=[lut[(a, v)].label for a, v in zip(hv.attribute, hv.value, strict=True)]
        )[["model", "half", "variation", "effect"]]
    out["model_pair_regressions"] = model_pair_regressions(
        per_s, ci=s.ci, method=s.correction, halves=half_s
    )
    prof = per[["model", "variation", "effect"]]
    out["profile_agreement"] = profile_agreement(
        prof, item="variation", ci=s.ci, method=s.correction, halves=half_v
    ).rename(columns={"model_a": "model_x", "model_b": "model_y", "effect": "estimate"})
    return out
