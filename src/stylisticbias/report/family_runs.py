"""A protocol family's report in MLflow: one run per judged model and a comparison run, laid
out by the family's :class:`RunLayout` (what its headline is, which rows become metrics, which
figures a model run draws). Families other than the paper's own tables (whose runs are
:mod:`stylisticbias.report.mlflow_log`) declare a layout and call :func:`log_family_report`.

The conventions of :mod:`stylisticbias.report.mlflow_log`:

* **Per-model run** (``run_kind=model``): the model's headline (:func:`headline_metrics`: the
  same metric keys in every run of a protocol, an estimate with ``.ci_low`` / ``.ci_high``; at
  most :data:`~stylisticbias.report.mlflow_log.MAX_RUN_METRICS`); every interval and test of its
  rows (:func:`flat_metrics`) in the logged table ``tables/metrics_all.json``; its rows of every
  table (the same artifact names in every model run, empty where the model has none); its own
  figures (``figures/<name>.png``); ``headline.json`` at the top level, so MLflow's compare view
  (top-level files only) lines up two runs' headlines.
* **Comparison run** (``run_kind=comparison``): ``README.md`` of the report, its figures,
  ``calibration.json`` when the calibrate stage ran, every table (all models), ``n_models``.

Params: the composed settings that tell runs apart (:func:`run_params`). Tags: ``model``,
``simulated``, ``protocol``, ``family``, ``engine``, the report id and digest, ``git_commit``
and, under DVC, ``dvc.exp_name``. A rerun with the same report replaces its earlier runs
(``stylisticbias.run_key``); sweeps nest as :mod:`stylisticbias.report.mlflow_log` does.
"""

from __future__ import annotations

import logging
import math
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from stylisticbias.errors import StylisticBiasError
from stylisticbias.report.mlflow_log import (
    ALL_METRICS_TABLE,
    HEADLINE_ARTIFACT,
    MAX_RUN_METRICS,
    TAG_DIGEST,
    TAG_KEY,
    TAG_REPORT,
    run_key,
)
from stylisticbias.report.mlflow_params import generator_option

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from stylisticbias.spec import Config

log = logging.getLogger(__name__)

PICKS = ("max", "min", "max_abs", "only")
_BAD = re.compile(r"[^A-Za-z0-9_\-./ ]")


@dataclass(frozen=True)
class Headline:
    """One headline metric of a model run: ``column`` of ``table``, the row picked by ``pick``
    (``max``, ``min``, ``max_abs``: the signed estimate of largest magnitude; ``only``: the
    model's single row) over the model's rows, with that row's interval when ``low``/``high``
    name its columns."""

    metric: str
    table: str
    column: str
    pick: str
    low: str | None = None
    high: str | None = None

    def __post_init__(self) -> None:
        if self.pick not in PICKS:
            raise StylisticBiasError(
                f"headline {self.metric}: pick {self.pick!r}; valid: {', '.join(PICKS)}"
            )


@dataclass(frozen=True)
class Flat:
    """The rows of ``table`` as flat metrics ``<table>.<key values>`` (the estimate
    ``column``), each with ``.ci_low`` / ``.ci_high`` (from ``low`` / ``high``) and ``.pval``
    where the table has those columns."""

    table: str
    column: str
    keys: tuple[str, ...]
    low: str = "ci_low"
    high: str = "ci_high"
    pval: str = "pval"


@dataclass(frozen=True)
class RunLayout:
    """What a family logs (see the module doc)."""

    family: str
    headline: tuple[Headline, ...]
    flat: tuple[Flat, ...]
    #: the tables the analyze stage wrote: ``reports/tables`` -> ``{name: frame}``
    read_tables: Callable[[Path], Mapping[str, pd.DataFrame]]
    #: a model run's own figures: ``{file name: (table, build(model's rows) -> Figure)}``
    model_figures: Mapping[str, tuple[str, Callable[[pd.DataFrame], Figure]]] = field(
        default_factory=dict
    )
    #: the params every run logs (default :func:`run_params`)
    params: Callable[[Config], dict[str, Any]] | None = None


def finite(x: Any) -> float | None:
    """``x`` as a finite float, else None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _rows(tables: Mapping[str, pd.DataFrame], table: str, model: str) -> pd.DataFrame | None:
    df = tables.get(table)
    if df is None or "model" not in df.columns:
        return None
    return df[df["model"].astype(str) == model]


def _pick(values: pd.Series, pick: str) -> Any:
    if pick == "max":
        return values.idxmax()
    if pick == "min":
        return values.idxmin()
    if pick == "max_abs":
        return values.abs().idxmax()
    return values.index[0]


def headline_metrics(
    tables: Mapping[str, pd.DataFrame], model: str, headline: tuple[Headline, ...]
) -> dict[str, float]:
    """The run page's metrics of ``model`` (see :class:`Headline`); a table without rows of
    the model is left out, so every run of one protocol carries the same keys."""
    out: dict[str, float] = {}
    for h in headline:
        rows = _rows(tables, h.table, model)
        if rows is None or h.column not in rows.columns:
            continue
        rows = rows[pd.to_numeric(rows[h.column], errors="coerce").notna()]
        if rows.empty:
            continue
        values = rows[h.column].astype(float)
        if h.pick == "only" and len(rows) != 1:
            raise StylisticBiasError(
                f"headline {h.metric}: {h.table} has {len(rows)} rows of {model}; pick 'only' "
                "needs one"
            )
        idx = _pick(values, h.pick)
        row = rows.loc[idx]
        out[h.metric] = float(row[h.column])
        for suffix, col in (("ci_low", h.low), ("ci_high", h.high)):
            v = finite(row.get(col)) if col else None
            if v is not None:
                out[f"{h.metric}.{suffix}"] = v
    if len(out) > MAX_RUN_METRICS:
        raise StylisticBiasError(
            f"{len(out)} headline metrics for {model}; at most {MAX_RUN_METRICS} fit a run page"
        )
    return out


def flat_metrics(
    tables: Mapping[str, pd.DataFrame], model: str, flat: tuple[Flat, ...]
) -> dict[str, float]:
    """Every interval and test of ``model``'s rows as flat metrics (see :class:`Flat`)."""
    out: dict[str, float] = {}
    for f in flat:
        rows = _rows(tables, f.table, model)
        if rows is None or rows.empty:
            continue
        for _, row in rows.iterrows():
            key = _BAD.sub("_", ".".join([f.table, *(str(row[k]) for k in f.keys)]))
            for suffix, col in (
                ("", f.column),
                (".ci_low", f.low),
                (".ci_high", f.high),
                (".pval", f.pval),
            ):
                v = finite(row[col]) if col in row.index else None
                if v is not None:
                    out[key + suffix] = v
    return out


def section(spec: Any) -> dict[str, Any]:
    """A spec (or the mapping a plug-in generator or model keeps) as a mapping."""
    return asdict(spec) if is_dataclass(spec) and not isinstance(spec, type) else dict(spec or {})


def run_params(config: Config) -> dict[str, Any]:
    """The params every run of a family report logs (what differs between sweep members)."""
    judge, analysis = asdict(config.judge), asdict(config.analysis)
    return {
        "protocol": config.protocol,
        "seed": config.seed,
        "faces.n": config.faces.n,
        "models": list(config.model_names),
        "judge.scenarios": judge.get("scenarios"),
        "judge.seeds": judge.get("seeds"),
        "judge.temperature": judge.get("temperature"),
        "generator": generator_option(section(config.generator)),
        "analysis": {k: v for k, v in analysis.items() if k not in ("group_abbrev", "workers")},
    }


def log_family_report(
    config: Config, reports: Path, layout: RunLayout, report_digest: str = ""
) -> dict[str, str]:
    """Log a protocol's report (``reports/``) by ``layout``: one run per judged model and a
    comparison run (see the module doc); returns ``{run name: run id}``."""
    from stylisticbias.tracking import bounded, preflight, tracking_spec

    spec = tracking_spec({"tracking": asdict(config.tracking)})
    with bounded(spec):
        preflight(spec)
        return _log(config, reports, layout, report_digest)


def _log(config: Config, reports: Path, layout: RunLayout, digest: str) -> dict[str, str]:
    import matplotlib.pyplot as plt
    import mlflow

    from stylisticbias.analysis.calibration import is_simulated
    from stylisticbias.tracking import (
        delete_other_runs,
        git_commit,
        log_metrics,
        log_params,
        start_run,
        tracking_spec,
    )
    from stylisticbias.tracking.grouping import TAG_EXP_NAME, TAG_KIND, dvc_exp_name, sweep_id

    spec = tracking_spec({"tracking": asdict(config.tracking)})
    tables = dict(layout.read_tables(reports / "tables"))
    common = (layout.params or run_params)(config)
    exp_name, sweep = dvc_exp_name(), sweep_id()
    base_tags: dict[str, Any] = {
        TAG_REPORT: uuid.uuid4().hex[:12],
        TAG_DIGEST: digest,
        "protocol": config.protocol,
        "family": layout.family,
    }
    sha = git_commit()
    if sha:
        base_tags["mlflow.source.git.commit"] = sha
    if exp_name:
        base_tags[TAG_EXP_NAME] = exp_name
    suffix = f" @{exp_name}" if exp_name else ""
    key_parts = {"digest": digest, "params": common, "sweep": sweep, "exp": exp_name}
    ids: dict[str, str] = {}

    def finished(key: str, run: Any) -> str:
        gone = delete_other_runs(run.info.experiment_id, TAG_KEY, key, run.info.run_id)
        if gone:
            log.info("replaced %d earlier run(s) of the same report", len(gone))
        return str(run.info.run_id)

    sims = []
    for m in config.model_names:
        model = section(config.model(m))
        engine = dict(model.get("engine") or {})
        sim = is_simulated(m, config)
        sims.append(sim)
        key = run_key(kind="model", model=m, **key_parts)
        tags = {
            **base_tags,
            TAG_KIND: "model",
            "model": m,
            "simulated": sim,
            "engine": engine.get("name"),
            TAG_KEY: key,
        }
        with start_run(spec, run_name=f"{m}{suffix}", tags=tags, sweep=sweep) as run:
            log_params(
                {
                    **common,
                    "model": m,
                    "model.engine": engine.get("name"),
                    "model.decoding": engine.get("decoding"),
                    "model.hub_id": model.get("hub_id"),
                }
            )
            head = headline_metrics(tables, m, layout.headline)
            log_metrics(head)
            mlflow.log_dict(dict(sorted(head.items())), HEADLINE_ARTIFACT)
            every = flat_metrics(tables, m, layout.flat)
            keys = sorted(every)
            mlflow.log_table(
                pd.DataFrame({"metric": keys, "value": [every[k] for k in keys]}),
                ALL_METRICS_TABLE,
            )
            for name, df in sorted(tables.items()):
                rows = _rows(tables, name, m)
                mlflow.log_table(
                    (rows if rows is not None else df.iloc[0:0]).reset_index(drop=True),
                    f"tables/{name}.json",
                )
            for name, (table, build) in sorted(layout.model_figures.items()):
                rows = _rows(tables, table, m)
                if rows is not None and not rows.empty:
                    fig = build(rows.reset_index(drop=True))
                    mlflow.log_figure(fig, f"figures/{name}")
                    plt.close(fig)
            ids[m] = finished(key, run)
    key = run_key(kind="comparison", **key_parts)
    tags = {
        **base_tags,
        TAG_KIND: "comparison",
        "model": "all",
        "simulated": all(sims),
        TAG_KEY: key,
    }
    with start_run(spec, run_name=f"comparison{suffix}", tags=tags, sweep=sweep) as run:
        log_params(common)
        log_metrics({"n_models": float(len(config.model_names))})
        for name, df in sorted(tables.items()):
            mlflow.log_table(df.reset_index(drop=True), f"tables/{name}.json")
        for fig in sorted((reports / "figures").glob("*.png")):
            mlflow.log_artifact(str(fig.resolve()), "figures")
        for doc in (reports / "README.md", reports / "calibration.json"):
            if doc.is_file():
                mlflow.log_artifact(str(doc.resolve()))
        ids["comparison"] = finished(key, run)
    log.info(
        "%s protocol %s: %d model run(s) + comparison logged",
        layout.family,
        config.protocol,
        len(config.model_names),
    )
    return ids
