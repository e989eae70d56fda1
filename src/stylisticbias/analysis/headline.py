"""The headline metrics of one judged model, each with its interval: what a reader compares
models by (the leaderboard, the MLflow run page, ``reports/metrics.json``).

Read from the analysis tables (long form, the table registry's vocabulary):

============================  =================================================  ==============
key                           what                                               interval
============================  =================================================  ==============
``sbs``                       SBS over every variation x scenario                face bootstrap
``abs_sbs``                   |SBS| of that mean                                 |x| of SBS's
``vs_debiased.<dimension>``   de-biased Variation Strength per demographic dim.  face bootstrap
``significant_share``         share of variations whose SBS differs from 0       Wilson
                              (BH-corrected p < alpha)
``invalid_rate``              share of invalid answers                           face bootstrap
``cohens_d``                  face-level Cohen's d of the shifts                 face bootstrap
``n_variations_80``           variations that carry 80% of the cumulative |SBS|  (none)
``sbs.category.<category>``   SBS per variation category                         face bootstrap
============================  =================================================  ==============

The per-category SBS are the long tail of the headline (:attr:`Headline.tail`): the
leaderboard shows them, the MLflow run page and ``metrics.json`` leave them to the tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd
from scipy.stats import norm

from stylisticbias.analysis.paper_tables import DIMENSIONS
from stylisticbias.benchmark import slug


@dataclass(frozen=True)
class Headline:
    """One headline number of one model."""

    key: str  # metric key, e.g. ``vs_debiased.age`` (MLflow / metrics.json name)
    label: str  # for people, e.g. ``VS (de-biased), age``
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    pval: float | None = None  # corrected p-value where the table has one
    tail: bool = False  # long tail: leaderboard only

    @property
    def has_ci(self) -> bool:
        """Whether an interval is known."""
        return self.ci_low is not None and self.ci_high is not None


def _num(x: object) -> float | None:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion ``k / n`` (None for n = 0)."""
    if n <= 0:
        return None, None
    z = float(norm.ppf(0.5 + level / 2))
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def abs_interval(lo: float | None, hi: float | None) -> tuple[float | None, float | None]:
    """The interval of ``|x|`` from an interval ``[lo, hi]`` of ``x``: its image under the
    absolute value (the percentile interval of ``|x|`` itself when ``[lo, hi]`` excludes 0;
    ``[0, max(|lo|, |hi|)]``, which covers it, when it holds 0)."""
    if lo is None or hi is None:
        return None, None
    if lo <= 0.0 <= hi:
        return 0.0, max(-lo, hi)
    return min(abs(lo), abs(hi)), max(abs(lo), abs(hi))


def _row(df: pd.DataFrame | None, model: str, **eq: object) -> pd.Series | None:
    if df is None or not len(df):
        return None
    mask = df["model"] == model
    for k, v in eq.items():
        mask &= df[k] == v
    hit = df[mask]
    return hit.iloc[0] if len(hit) else None


def _from_row(
    key: str,
    label: str,
    row: pd.Series,
    value: str,
    low: str,
    high: str,
    pval: str | None = None,
) -> Headline:
    """A headline from one table row: its point, interval and (where given) corrected p
    columns."""
    p = None if pval is None else _num(row[pval])
    return Headline(key, label, _num(row[value]), _num(row[low]), _num(row[high]), p)


def model_headline(
    tables: Mapping[str, pd.DataFrame], model: str, alpha: float, ci: float = 0.95
) -> list[Headline]:
    """The headline of ``model`` (its name in the tables), in display order. A number whose
    table is absent (e.g. invalid rates without judgments) is left out."""
    out: list[Headline] = []
    r = _row(tables.get("sbs_overall"), model)
    if r is not None:
        out.append(
            _from_row("sbs", "SBS (all variations)", r, "sbs", "ci_low", "ci_high", "pval_corr")
        )
        lo, hi = abs_interval(_num(r["ci_low"]), _num(r["ci_high"]))
        out.append(Headline("abs_sbs", "|SBS| (all variations)", _num(r["abs_sbs"]), lo, hi))
    vs = tables.get("vs_by_model")
    for dim in DIMENSIONS:
        r = _row(vs, model, dimension=dim)
        if r is not None:
            key, label = DIMENSIONS[dim], DIMENSIONS[dim].replace("_", " ")
            cols = ("vs_debiased", "debiased_ci_low", "debiased_ci_high", "pval_corr")
            out.append(_from_row(f"vs_debiased.{key}", f"VS de-biased, {label}", r, *cols))
    var = tables.get("sbs_by_variation_model")
    if var is not None:
        mine = var[var["model"] == model]
        p = pd.to_numeric(mine["pval_corr"], errors="coerce")
        n, k = int(p.notna().sum()), int((p < alpha).sum())
        if n:
            lo, hi = wilson(k, n, ci)
            out.append(
                Headline("significant_share", "significant variations (share)", k / n, lo, hi)
            )
    r = _row(tables.get("invalid_rates"), model, scenario_id=0)
    if r is not None:
        cols = ("invalid_rate", "ci_low", "ci_high")
        out.append(_from_row("invalid_rate", "invalid answers (share)", r, *cols))
    r = _row(tables.get("per_model_effects"), model)
    if r is not None:
        out.append(_from_row("cohens_d", "Cohen's d", r, "cohens_d", "d_ci_low", "d_ci_high"))
    par = tables.get("pareto")
    if par is not None and (par["model"] == model).any():
        n80 = par.loc[par["model"] == model, "n_variations_threshold"].iloc[0]
        out.append(Headline("n_variations_80", "variations carrying 80% of |SBS|", _num(n80)))
    cat = tables.get("sbs_by_category_model")
    if cat is not None:
        for row in cat[cat["model"] == model].itertuples(index=False):
            out.append(
                Headline(
                    f"sbs.category.{slug(str(row.category))}",
                    f"SBS, {row.category}",
                    _num(row.sbs),
                    _num(row.ci_low),
                    _num(row.ci_high),
                    _num(row.pval_corr),
                    tail=True,
                )
            )
    return out


def flat(headline: list[Headline], tail: bool = False) -> dict[str, float]:
    """``{key: value, key.ci_low: ..., key.ci_high: ...}`` of the finite numbers (the tail
    only when asked)."""
    out: dict[str, float] = {}
    for h in headline:
        if h.tail and not tail:
            continue
        for suffix, v in (("", h.value), (".ci_low", h.ci_low), (".ci_high", h.ci_high)):
            if v is not None:
                out[h.key + suffix] = v
    return out


#: ``reports/metrics.json`` (the DVC metrics ``dvc exp show`` lists): per model, these keys
DVC_KEYS: tuple[str, ...] = (
    "sbs",
    "sbs.ci_low",
    "sbs.ci_high",
    "significant_share",
    "invalid_rate",
)
#: every number of the analysis per model (the former ``metrics.json``): an output, not a metric
METRICS_ALL = "metrics_all.json"


def dvc_headline(
    tables: Mapping[str, pd.DataFrame], models: list[str], alpha: float, ci: float = 0.95
) -> dict[str, dict[str, float]]:
    """``reports/metrics.json``: ``{model: {sbs, sbs_ci_low, sbs_ci_high, significant_share,
    invalid_rate}}`` -- five columns per model in ``dvc exp show``; the rest is in
    :data:`METRICS_ALL`."""
    out: dict[str, dict[str, float]] = {}
    for m in models:
        f = flat(model_headline(tables, m, alpha, ci))
        out[m] = {k.replace(".", "_"): f[k] for k in DVC_KEYS if k in f}
    return out
