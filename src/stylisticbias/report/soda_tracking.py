"""Log the SODA audit (``<paths.soda>``) to MLflow: one run, ``run_kind=soda``.

Named like the other protocols' runs (:mod:`~.mlflow_log`): the run page holds the headline with
its intervals (``<metric>``, ``<metric>.ci_low``, ``<metric>.ci_high``), every other number is in
the logged table ``tables/metrics_all.json`` (``metric``, ``value``), and each SODA table is a
logged table ``tables/<name>.json``; the audit's ``README.md`` and ``metrics.json`` are
artifacts. Intervals (level ``analysis.ci``): means over objects (the audit's units) with
Student-t intervals; the share of significant BDS tests with its Clopper-Pearson interval.

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


def share_ci(name: str, hits: int, n: int, level: float) -> dict[str, float]:
    """``{name: hits / n}`` plus its Clopper-Pearson interval."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return {}
    lo, hi = proportion_confint(hits, n, alpha=1 - level, method="beta")
    return {name: hits / n, f"{name}.ci_low": float(lo), f"{name}.ci_high": float(hi)}


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
        hits = int((b["pval"] < alpha).sum())
        head |= share_ci("significant_share", hits, int(b["pval"].notna().sum()), level)
    c = tables["soda_cds"]
    c = c[(c["attribute"] == "all") & (c["variant"] == "original")] if not c.empty else c
    if not c.empty:
        head |= mean_ci("cds", _per_object(c, "cds"), level)
        for dim, rows in c.groupby("dimension", sort=True):
            tail |= mean_ci(f"cds.{dim}", rows["cds"], level)
    v = tables["soda_vac"]
    if not v.empty:
        head |= mean_ci("vac", _per_object(v, "vac"), level)
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
