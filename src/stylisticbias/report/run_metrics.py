"""The point metrics of the analysis tables with their confidence intervals, as MLflow metrics.

Every estimate the analysis writes with an interval is logged as ``<name>`` plus
``<name>.ci_low`` / ``<name>.ci_high``, so that the MLflow UI lists each interval beside its
point (``sbs.category.fashion``, ``sbs.category.fashion.ci_low``, ...). Names are those of
``reports/metrics.json`` (:func:`stylisticbias.analysis.layout.metrics_json`): slugs of the
table's labels (``Facial hair`` -> ``facial-hair``), demographic dimensions as the score
columns (``body`` -> ``body_type``). :data:`FAMILIES` says which table column feeds which name.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from stylisticbias.analysis.paper_tables import DIMENSIONS
from stylisticbias.benchmark import slug

log = logging.getLogger(__name__)

#: The suffixes of an interval's bounds.
CI_LOW, CI_HIGH = "ci_low", "ci_high"


@dataclass(frozen=True)
class MetricFamily:
    """Point estimates of one analysis table, each with its interval.

    ``keys`` are the columns whose slugs name a row (``("category",)`` ->
    ``sbs.category.fashion``); none: one row per model (``sbs.overall``). ``where`` keeps only the
    rows with these column values (e.g. the all-scenarios row of ``invalid_rates``).
    """

    table: str
    prefix: str
    value: str
    keys: tuple[str, ...] = ()
    low: str = CI_LOW
    high: str = CI_HIGH
    #: the metric-name suffixes of the bounds (an interval that is not a CI says so)
    low_name: str = CI_LOW
    high_name: str = CI_HIGH
    where: tuple[tuple[str, Any], ...] = ()

    def name(self, row: Mapping[str, Any]) -> str:
        """The metric name of one table row."""
        parts = [self.prefix]
        for k in self.keys:
            label = str(row[k])
            parts.append(DIMENSIONS.get(label, label) if k == "dimension" else slug(label))
        return ".".join(parts)


#: Every point metric with an interval, per model (and pooled: the ``All`` rows).
FAMILIES: tuple[MetricFamily, ...] = (
    MetricFamily("sbs_overall", "sbs.overall", "sbs"),
    MetricFamily("sbs_by_category_model", "sbs.category", "sbs", ("category",)),
    MetricFamily("sbs_by_scenario", "sbs.scenario", "sbs", ("positive",)),
    MetricFamily(
        "sbs_by_scenario_category_model", "sbs.scenario_category", "sbs", ("scenario_category",)
    ),
    MetricFamily("sbs_by_variation_model", "sbs.variation", "sbs", ("category", "variation")),
    # the paper VS's interval is a bootstrap range, not a CI (analysis/vs.py)
    MetricFamily(
        "vs_by_model",
        "vs",
        "vs",
        ("dimension",),
        low="range_low",
        high="range_high",
        low_name="range_low",
        high_name="range_high",
    ),
    MetricFamily(
        "vs_by_model",
        "vs_debiased",
        "vs_debiased",
        ("dimension",),
        low="debiased_ci_low",
        high="debiased_ci_high",
    ),
    MetricFamily("per_model_effects", "cohens_d", "cohens_d", low="d_ci_low", high="d_ci_high"),
    MetricFamily("position_bias", "position_bias", "share"),
    MetricFamily("letter_bias", "letter_bias", "share"),
    MetricFamily("invalid_rates", "invalid_rate", "invalid_rate", where=(("scenario_id", 0),)),
)


def _finite(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def interval_metrics(
    tables: Mapping[str, pd.DataFrame],
    label: str,
    families: tuple[MetricFamily, ...] = FAMILIES,
) -> dict[str, float]:
    """``{name: point, name.ci_low: low, name.ci_high: high}`` for the rows of model ``label``.

    A table or column the analysis did not write is left out (logged at debug level); a
    missing (NaN) bound is left out, the point is still logged.
    """
    out: dict[str, float] = {}
    for fam in families:
        df = tables.get(fam.table)
        need = {"model", fam.value, fam.low, fam.high, *fam.keys, *(c for c, _ in fam.where)}
        if df is None or not need <= set(df.columns):
            log.debug(
                "no %s metrics: %s lacks %s",
                fam.prefix,
                fam.table,
                need - set(getattr(df, "columns", ())),
            )
            continue
        rows = df[df["model"].astype(str) == label]
        for col, value in fam.where:
            rows = rows[rows[col] == value]
        for row in rows.to_dict("records"):
            name = fam.name(row)
            for key, col in (
                (name, fam.value),
                (f"{name}.{fam.low_name}", fam.low),
                (f"{name}.{fam.high_name}", fam.high),
            ):
                v = _finite(row[col])
                if v is not None:
                    out[key] = v
    return out


def official_metrics(tables: Mapping[str, pd.DataFrame]) -> dict[str, float]:
    """The released code's pooled analyses as metrics: ``eta2p.<factor>`` (with its interval),
    ``mixed.<term>`` for the variance components and R^2, ``agreement.<measure>`` (with its
    interval) for Kendall's W and the ICCs, ``negativity.<pair>.ratio`` (with its interval)."""
    out: dict[str, float] = {}

    def put(name: str, row: Mapping[str, Any], value: str) -> None:
        for key, col in (
            (name, value),
            (f"{name}.{CI_LOW}", CI_LOW),
            (f"{name}.{CI_HIGH}", CI_HIGH),
        ):
            v = _finite(row.get(col))
            if v is not None:
                out[key] = v

    es = tables.get("effect_sizes")
    for row in [] if es is None else es.to_dict("records"):
        put(f"eta2p.{slug(str(row['factor']))}", row, "partial_eta2")
    mm = tables.get("mixed_model")
    for row in [] if mm is None else mm.to_dict("records"):
        if str(row["term"]) in (
            "face_variance",
            "residual_variance",
            "r2_marginal",
            "r2_conditional",
        ):
            put(f"mixed.{row['term']}", row, "estimate")
    ag = tables.get("scenario_agreement")
    for row in [] if ag is None else ag.to_dict("records"):
        if str(row["model_x"]) == "all":
            put(f"agreement.{row['measure']}", row, "estimate")
    na = tables.get("negativity_asymmetry")
    for row in [] if na is None else na.to_dict("records"):
        put(f"negativity.{slug(str(row['pair']))}.ratio", row, "ratio")
    return out
