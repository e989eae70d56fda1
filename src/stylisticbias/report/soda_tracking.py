"""Log the SODA audit (``<paths.soda>``) to MLflow: one run, ``run_kind=soda``.

Named like the other protocols' runs (:mod:`~.mlflow_log`): the run page holds the headline with
its intervals (``<metric>``, ``<metric>.ci_low``, ``<metric>.ci_high``), every other number is in
the logged table ``tables/metrics_all.json`` (``metric``, ``value``), and each SODA table is a
logged table ``tables/<name>.json``; the audit's ``README.md`` and ``metrics.json`` are
artifacts. Intervals (level ``analysis.ci``; objects are the audit's units, the images of one
object share its attribute distributions): ``bds``, ``bds.<dimension>`` and ``cds`` -- means
over objects -- with Student-t intervals (:func:`mean_ci`); ``vac`` -- a mean over objects of a
right-skewed per-object value (a few objects far more concentrated than the rest) -- with
a skewness- and kurtosis-corrected t interval (:func:`skew_mean_ci`); ``significant_share`` with a
Wilson interval on the effective number of tests given the between-object variance
(:func:`cluster_share_ci`; the tests of one object share its base images and its power).

Headline: ``bds`` (all groups), ``bds.<dimension>``, ``cds`` (original prompts, over
attributes), ``vac`` (all conditions), ``significant_share`` (BDS tests with p < ``soda.alpha``),
``mitigation.cds.change_pct`` and ``mitigation.cds.pval`` (the paired t-test, where the
mitigation ran). Tail: ``bds.<dimension>.<group>``, ``cds.<dimension>``, ``vac.<condition>``,
the summary's counts (``planted_found``, ``null_rejected``, ...).

Reruns replace the earlier run of the same audit (tag ``stylisticbias.run_key``: a digest of the
audit's tables and settings), as the report's runs do.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stylisticbias.report.mlflow_log import (
    TAG_DIGEST,
    TAG_KEY,
    TAG_KIND,
    _log_all,
    _replace_older,
    flatten_metrics,
    run_key,
)

log = logging.getLogger(__name__)

#: the SODA tables (``<paths.soda>/tables/<name>.csv``), logged as ``tables/<name>.json``
SODA_TABLE_NAMES = ("soda_bds", "soda_cds", "soda_vac", "soda_mitigation")


def mean_ci(name: str, values: Iterable[float], level: float) -> dict[str, float]:
    """``{name: mean}`` plus its Student-t interval (``.ci_low``/``.ci_high``; n >= 2)."""
    from scipy import stats

    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if not len(x):
        return {}
    out = {name: float(x.mean())}
    if len(x) >= 2:
        sem = float(x.std(ddof=1) / math.sqrt(len(x)))
        lo, hi = (
            stats.t.interval(level, len(x) - 1, loc=x.mean(), scale=sem)
            if sem > 0
            else (x.mean(), x.mean())
        )
        out |= {f"{name}.ci_low": float(lo), f"{name}.ci_high": float(hi)}
    return out


def skew_mean_ci(name: str, values: Iterable[float], level: float) -> dict[str, float]:
    """``{name: mean}`` plus a skewness- and kurtosis-corrected Student-t interval.

    With ``T = (mean - mu) / s`` (``s`` the sample standard deviation), ``n`` values and
    ``g`` their skewness (``scipy.stats.skew(bias=False)``), Hall's (1992) monotone
    transformation ``h(T) = T + g T^2 / 3 + g^2 T^3 / 27 + g / (6 n)`` removes the skewness
    of ``T`` to order ``n^-1/2``; the interval is ``{mu : |h(T)| <= q / sqrt(n)}``, i.e.
    ``[mean - s h^-1(q / sqrt(n)), mean - s h^-1(-q / sqrt(n))]`` with ``h^-1(y) = 3 ((1 + g
    (y - g / (6 n)))^(1/3) - 1) / g``. ``q`` is the Student-t quantile on the effective
    degrees of freedom of ``s^2``, ``df = 2 / (2 / (n - 1) + k / n)`` (``Var(s^2) = sigma^4
    (2 / (n - 1) + k / n)`` matched by a scaled chi-square), ``k`` the excess kurtosis
    (``scipy.stats.kurtosis(bias=False)``, floored at 0, so never more than ``n - 1``
    degrees of freedom). For a symmetric normal-tailed sample (``g = k = 0``) it is the
    Student-t interval; a right-skewed one moves it up (the values a small sample of a skewed
    population lacks are the large ones), a heavy-tailed one widens it. Fewer than 3 values:
    the Student-t interval (:func:`mean_ci`); fewer than 4: ``k = 0``."""
    from scipy import stats

    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if len(x) < 3:
        return mean_ci(name, x, level)
    n, m, s = len(x), float(x.mean()), float(x.std(ddof=1))
    if not s > 0:
        return {name: m, f"{name}.ci_low": m, f"{name}.ci_high": m}
    g = float(stats.skew(x, bias=False))
    k = max(0.0, float(stats.kurtosis(x, bias=False))) if n >= 4 else 0.0
    df = 2.0 / (2.0 / (n - 1) + k / n)
    q = float(stats.t.ppf(0.5 + level / 2, df)) / math.sqrt(n)

    def inverse(y: float) -> float:
        if abs(g) < 1e-12:
            return y
        return 3.0 * (float(np.cbrt(1.0 + g * (y - g / (6 * n)))) - 1.0) / g

    return {name: m, f"{name}.ci_low": m - s * inverse(q), f"{name}.ci_high": m - s * inverse(-q)}


def share_ci(name: str, hits: int, n: int, level: float) -> dict[str, float]:
    """``{name: hits / n}`` plus its Clopper-Pearson interval (the tests as independent)."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return {}
    lo, hi = proportion_confint(hits, n, alpha=1 - level, method="beta")
    return {name: hits / n, f"{name}.ci_low": float(lo), f"{name}.ci_high": float(hi)}


def cluster_share_ci(
    name: str, hits: Iterable[float], tests: Iterable[float], level: float
) -> dict[str, float]:
    """``{name: p}``, ``p = sum(hits) / sum(tests)`` over clusters (objects: ``hits[i]`` of
    ``tests[i]``), plus a Wilson interval on the effective number of tests.

    The variance of ``p`` is the cluster-robust one of a ratio, ``v = sum((hits_i - p
    tests_i)^2) / (k (k - 1) tbar^2)`` over the ``k`` clusters (``tbar`` their mean size); the
    effective number of tests ``n_eff = p (1 - p) / v`` (the tests' number when ``v = 0``,
    e.g. no hit at all); the interval is Wilson's score interval for ``p`` on ``n_eff`` tests
    with the Student-t quantile on ``k - 1`` degrees of freedom (the variance is estimated
    from ``k`` clusters). Fewer than 2 clusters: no interval."""
    from scipy import stats

    h = np.asarray(list(hits), dtype=float)
    t = np.asarray(list(tests), dtype=float)
    keep = t > 0
    h, t = h[keep], t[keep]
    if not len(t):
        return {}
    k, total = len(t), float(t.sum())
    p = float(h.sum() / total)
    if k < 2:
        return {name: p}
    v = float(((h - p * t) ** 2).sum() / (k * (k - 1) * t.mean() ** 2))
    n_eff = p * (1 - p) / v if v > 0 and 0 < p < 1 else total
    q = float(stats.t.ppf(0.5 + level / 2, k - 1))
    centre = p + q * q / (2 * n_eff)
    half = q * math.sqrt(p * (1 - p) / n_eff + q * q / (4 * n_eff * n_eff))
    den = 1 + q * q / n_eff
    lo, hi = max(0.0, (centre - half) / den), min(1.0, (centre + half) / den)
    return {name: p, f"{name}.ci_low": lo, f"{name}.ci_high": hi}


def _per_object(df: pd.DataFrame, value: str) -> pd.Series:
    """One number per object (the mean of its rows): the unit the intervals are over."""
    return df.groupby("object", sort=True)[value].mean()


def soda_metrics(
    tables: dict[str, pd.DataFrame], summary: dict[str, Any], alpha: float, level: float
) -> tuple[dict[str, float], dict[str, float]]:
    """(headline, tail) of the audit (module docstring)."""
    head: dict[str, float] = {}
    tail: dict[str, float] = {}
    b = tables["soda_bds"]
    if not b.empty:
        head |= mean_ci("bds", _per_object(b, "bds"), level)
        for dim, rows in b.groupby("dimension", sort=True):
            head |= mean_ci(f"bds.{dim}", _per_object(rows, "bds"), level)
        for (dim, group), rows in b.groupby(["dimension", "group"], sort=True):
            tail |= mean_ci(f"bds.{dim}.{group}", rows["bds"], level)
        tested = b[b["pval"].notna()]
        per = (tested["pval"] < alpha).groupby(tested["object"], sort=True).agg(["sum", "size"])
        head |= cluster_share_ci("significant_share", per["sum"], per["size"], level)
    c = tables["soda_cds"]
    c = c[(c["attribute"] == "all") & (c["variant"] == "original")] if not c.empty else c
    if not c.empty:
        head |= mean_ci("cds", _per_object(c, "cds"), level)
        for dim, rows in c.groupby("dimension", sort=True):
            tail |= mean_ci(f"cds.{dim}", rows["cds"], level)
    v = tables["soda_vac"]
    if not v.empty:
        head |= skew_mean_ci("vac", _per_object(v, "vac"), level)
        for cond, rows in v.groupby("condition", sort=True):
            tail |= mean_ci(f"vac.{cond}", rows["vac"], level)
    m = tables["soda_mitigation"]
    if not m.empty:
        row = m[(m["metric"] == "cds") & (m["dimension"] == "all")]
        if len(row):
            head["mitigation.cds.change_pct"] = float(row["change_pct"].iloc[0])
            head["mitigation.cds.pval"] = float(row["pval"].iloc[0])
    counts = {k: v for k, v in summary.items() if k not in ("bds_by_group",)}
    tail |= flatten_metrics({k: v for k, v in counts.items() if not isinstance(v, bool)})
    return head, tail


def read_audit(soda_dir: Path) -> tuple[dict[str, pd.DataFrame], dict[str, Any]] | None:
    """The audit's tables and ``metrics.json``; None when it is off or not there."""
    summ_path = soda_dir / "metrics.json"
    if not summ_path.is_file():
        return None
    summary = json.loads(summ_path.read_text(encoding="utf-8"))
    if not summary.get("enabled"):
        return None
    tables = {n: pd.read_csv(soda_dir / "tables" / f"{n}.csv") for n in SODA_TABLE_NAMES}
    return tables, summary


def audit_digest(soda_dir: Path) -> str:
    """md5 over the audit's metrics, README and tables (names and bytes), in name order."""
    h = hashlib.md5()
    files = [soda_dir / "metrics.json", soda_dir / "README.md"]
    files += sorted((soda_dir / "tables").glob("*.csv"))
    for f in files:
        if f.is_file():
            h.update(f.relative_to(soda_dir).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def log_soda(
    tracking: Any,
    soda_dir: Path,
    settings: dict[str, Any],
    level: float,
    tags: dict[str, Any] | None = None,
) -> str | None:
    """Log the audit in ``soda_dir`` as one MLflow run; returns its id (None: audit off).

    ``tracking``: the typed tracking spec; ``settings``: the ``soda`` section (logged as
    ``soda.*`` params, ``alpha`` used for ``significant_share``); ``level``: the intervals'.
    """
    import mlflow

    from stylisticbias.tracking import ensure_experiment, log_metrics, log_params, start_run

    audit = read_audit(soda_dir)
    if audit is None:
        return None
    tables, summary = audit
    head, tail = soda_metrics(tables, summary, float(settings["alpha"]), level)
    digest = audit_digest(soda_dir)
    exp_id = ensure_experiment(tracking)
    key = run_key(kind="soda", digest=digest, settings=settings, level=level)
    run_tags = {
        **dict(tags or {}),
        TAG_KIND: "soda",
        TAG_DIGEST: digest,
        TAG_KEY: key,
        "model": str(settings.get("annotator")),
        "simulated": summary.get("generator", "standin") == "standin",
    }
    with start_run(tracking, run_name="soda", tags=run_tags) as run:
        log_params({"soda": settings, "analysis.ci": level})
        log_metrics(head)
        _log_all(head | tail)
        for name, df in tables.items():
            if not df.empty:
                mlflow.log_table(df, f"tables/{name}.json")
        for f in ("README.md", "metrics.json"):
            if (soda_dir / f).is_file():
                mlflow.log_artifact(str((soda_dir / f).resolve()), "soda")
        run_id = str(run.info.run_id)
    _replace_older(exp_id, key, run_id)
    log.info("logged the SODA audit (%d headline metrics) as run %s", len(head), run_id)
    return run_id
