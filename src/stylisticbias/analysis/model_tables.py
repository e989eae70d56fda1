"""The paper's per-model tables: Table 2 (variation strength), 7 (face-level effects) and 11
(share of scenarios with a significant demographic test), in the long format of
``shared/reference/stylisticbias/`` (see :mod:`stylisticbias.analysis.paper_tables`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stylisticbias.analysis.metrics import face_effects
from stylisticbias.analysis.paper_tables import AVERAGE, DIMENSIONS, with_significance
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import demographic_tests, p_adjust
from stylisticbias.analysis.table_registry import spec
from stylisticbias.analysis.vs import variation_strength


def table2(scores: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """``vs_by_model.csv``: VS per model x dimension (+ Average rows)."""
    return table2_finish(table2_cells(scores, s), s)


def table2_cells(scores: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """Table 2's model x dimension cells (``pval_corr`` across the models in ``scores``)."""
    return variation_strength(
        scores,
        DIMENSIONS,
        ddof=s.vs_ddof,
        n_resamples=s.n_resamples,
        ci=s.ci,
        seed=s.seed,
        n_permutations=s.n_permutations,
        method=s.correction,
        boundary=not s.official,
        stratified=not s.official,
    )


def table2_finish(vs: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """Table 2 from its cells (every model's): marks and the Average rows."""
    vs = with_significance(vs.copy(), s)
    avg = (
        vs.groupby("dimension", sort=False)[["vs", "vs_debiased", "noise_floor"]]
        .mean()
        .reset_index()
    )
    avg.insert(0, "model", AVERAGE)
    avg["significance"] = ""
    out = pd.concat([vs, avg], ignore_index=True)
    return out[spec("vs_by_model").built_columns]


def table7(delta: pd.DataFrame, faces: pd.Index, s: AnalysisSettings) -> pd.DataFrame:
    """``per_model_effects.csv``: face-level SBS, Cohen's d, zero and large-shift rates."""
    return table7_finish(table7_cells(delta, faces, s), s)


def table7_cells(
    delta: pd.DataFrame, faces: pd.Index, s: AnalysisSettings, weights: np.ndarray | None = None
) -> pd.DataFrame:
    """Table 7's per-model rows (uncorrected ``pval``); ``weights``: the face bootstrap draws."""
    return face_effects(
        delta,
        ["model"],
        ddof=s.cohens_d_ddof,
        zero_tol=s.zero_tol,
        large_shift=s.large_shift,
        n_resamples=s.n_resamples,
        ci=s.ci,
        seed=s.seed,
        min_faces=s.min_faces,
        zero_method=s.wilcoxon_zero_method,
        correction=s.wilcoxon_correction,
        faces=faces,
        weights=weights,
    )


def table7_finish(fe: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """Table 7 from its per-model rows (every model's): correction across models, Average."""
    fe = fe.copy()
    fe["pval_corr"] = p_adjust(fe["pval"].to_numpy(), s.correction)
    avg = fe[["sbs", "cohens_d", "zero_rate", "large_shift_rate"]].mean().to_frame().T
    avg.insert(0, "model", AVERAGE)
    out = pd.concat([fe, avg], ignore_index=True)
    return out[spec("per_model_effects").built_columns]


def table11(scores: pd.DataFrame, s: AnalysisSettings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``significance_rate_by_model.csv`` and the per-scenario tests behind it."""
    return table11_finish(table11_cells(scores, s))


def table11_cells(scores: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame:
    """The per-scenario demographic tests (corrected within each model x dimension)."""
    base = scores[scores["is_base"].astype(bool)]
    return demographic_tests(base, DIMENSIONS, method=s.correction, alpha=s.alpha)


def table11_finish(tests: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 11 from the per-scenario tests of every model."""
    agg = (
        tests.groupby(["model", "dimension"], sort=True)
        .agg(
            n_scenarios_significant_derived=("significant", "sum"),
            n_scenarios=("scenario_id", "size"),
            n_tested=("pval", lambda p: int(p.notna().sum())),
        )
        .reset_index()
    )
    agg["pct_scenarios_significant"] = (
        100.0 * agg["n_scenarios_significant_derived"] / agg["n_scenarios"]
    )
    avg = agg.groupby("dimension", sort=False)["pct_scenarios_significant"].mean().reset_index()
    avg.insert(0, "model", AVERAGE)
    out = pd.concat([agg, avg], ignore_index=True)
    out["n_scenarios_significant_derived"] = out["n_scenarios_significant_derived"].astype("Int64")
    return out[spec("significance_rate_by_model").built_columns], tests
