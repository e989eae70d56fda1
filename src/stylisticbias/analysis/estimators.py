"""The paper's estimator and the exact one side by side (``estimator_comparison.csv``).

The paper's phi is a 12-response estimate (granularity 1/12); ``exact`` decoding gives its
expectation. Means (SBS) agree in expectation, but the numbers that depend on the granularity
or on the response noise do not: Table 7's share of zero shifts and of ``|delta| >= 0.25``, and
every significance rate (Table 11). The scores stage stores both (``phi_paper``/``delta_paper``
and ``phi_exact``/``delta_exact``, see :mod:`stylisticbias.scores`); this table recomputes those
metrics under each, per model: ``metric`` (``sbs``, ``zero_rate``, ``large_shift_rate``,
``pct_scenarios_significant``), ``dimension`` (Table 11 only), ``paper`` (the paper-comparable
value: compare *this* with the paper's tables), ``exact``, ``difference`` = paper - exact.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from stylisticbias.analysis.metrics import face_effects
from stylisticbias.analysis.paper_tables import DIMENSIONS
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import demographic_tests

log = logging.getLogger(__name__)

ESTIMATOR_COLUMNS = ("phi_paper", "phi_exact", "delta_paper", "delta_exact")


def _metrics(scores: pd.DataFrame, phi: str, delta: str, s: AnalysisSettings) -> pd.DataFrame:
    rows = scores.assign(phi=scores[phi], delta=scores[delta])
    var = rows[~rows["is_base"].astype(bool) & rows["delta"].notna()]
    out = []
    if len(var):
        fe = face_effects(
            var,
            ["model"],
            ddof=s.cohens_d_ddof,
            zero_tol=s.zero_tol,
            large_shift=s.large_shift,
            n_resamples=1,
            ci=s.ci,
            seed=s.seed,
            min_faces=s.min_faces,
            zero_method=s.wilcoxon_zero_method,
        )
        for m in ("sbs", "zero_rate", "large_shift_rate"):
            out.append(fe[["model", m]].rename(columns={m: "value"}).assign(metric=m, dimension=""))
    base = rows[rows["is_base"].astype(bool) & rows["phi"].notna()]
    if len(base):
        t = demographic_tests(base, DIMENSIONS, method=s.correction, alpha=s.alpha)
        pct = t.groupby(["model", "dimension"], sort=True)["significant"].mean().mul(100.0)
        out.append(pct.rename("value").reset_index().assign(metric="pct_scenarios_significant"))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def estimator_comparison(scores: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame | None:
    """``estimator_comparison.csv``, or None when no model's scores hold both estimators.

    Per model (:func:`estimator_rows`; a model without exact values has no rows), then ordered
    by :func:`order_rows` -- the streaming analysis builds the same table from per-model rows.
    """
    models = scores["model"].astype(str)
    parts = [estimator_rows(g, s) for _, g in scores.groupby(models, sort=True, observed=True)]
    return order_rows([p for p in parts if p is not None])


def estimator_rows(scores: pd.DataFrame, s: AnalysisSettings) -> pd.DataFrame | None:
    """One model's rows of ``estimator_comparison.csv`` (unordered), or None when its scores
    lack either estimator (columns absent, or no exact value)."""
    if not set(ESTIMATOR_COLUMNS) <= set(scores.columns) or scores["phi_exact"].isna().all():
        return None
    keys = ["model", "metric", "dimension"]
    with pd.option_context("mode.chained_assignment", None):
        paper = _metrics(scores, "phi_paper", "delta_paper", s).rename(columns={"value": "paper"})
        exact = _metrics(scores, "phi_exact", "delta_exact", s).rename(columns={"value": "exact"})
    if paper.empty and exact.empty:
        return None
    out = paper.merge(exact, on=keys, how="outer")
    out["model"] = out["model"].astype(str)
    out["difference"] = out["paper"] - out["exact"]
    return out[[*keys, "paper", "exact", "difference"]]


def order_rows(frames: list[pd.DataFrame]) -> pd.DataFrame | None:
    """Per-model :func:`estimator_rows` as the table: sorted by model, metric, dimension."""
    if not frames:
        return None
    out = pd.concat(frames, ignore_index=True)
    order = {"sbs": 0, "zero_rate": 1, "large_shift_rate": 2, "pct_scenarios_significant": 3}
    out = out.sort_values(
        ["model", "metric", "dimension"],
        key=lambda c: c.map(order) if c.name == "metric" else c,
        kind="stable",
    )
    return out.reset_index(drop=True).replace({np.inf: np.nan})
