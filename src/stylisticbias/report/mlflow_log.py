"""Log the analysis to MLflow: one run per model, one comparison run, sweeps as parent/child.

* **Per-model run** (``run_kind=model``): the model's headline metrics
  (:mod:`stylisticbias.analysis.headline`: ``sbs``, ``vs_debiased.age``, ``significant_share``,
  ``invalid_rate``, ... each with ``.ci_low`` / ``.ci_high``; at most :data:`MAX_RUN_METRICS`),
  so the run page shows what matters; every other number (each interval of the tables and
  ``metrics.json``'s entry: ``sbs.category.fashion``, ``sbs.scenario.stylish``, ...) in the
  logged table ``tables/metrics_all.json`` (columns ``metric``, ``value``); its rows of every
  per-model analysis table (``mlflow.log_table``, the same artifact names in every model run, so
  the UI's compare view lines them up), per-model figures (``mlflow.log_figure``), and its
  headline again as ``headline.json`` at the artifact root (MLflow's compare view lists only
  top-level files, so two model runs' headlines line up there), its
  scores as a dataset input whose digest is the DVC md5 of images + scores, with the data
  versions as tags keyed by role (``data.faces``, ``data.variations``, ``data.scores``: the same
  keys in every model run).
* **Comparison run** (``run_kind=comparison``): the cross-model figures (Figs. 5-8), the pooled
  figures, ``reports/README.md``, the profile-agreement / pair-regression / paper-comparison
  tables, the paper-comparison summary as metrics (``paper.table2.mae`` ...) and the pooled
  (``All``) headline; the pooled long tail in ``tables/metrics_all.json``.
* **Sweeps**: when a sweep id is found (env ``STYLISTICBIAS_SWEEP_ID``; a queued
  ``dvc exp run`` -> ``dvc-exp:<baseline rev>``; a Hydra multirun -> its sweep dir), every run is
  created as a child (``mlflow.parentRunId``) of one parent run tagged with that id, found or
  created through ``mlflow.search_runs``; the MLflow UI then lists the sweep's runs side by side.

All runs carry ``git_commit`` + ``mlflow.source.git.commit``, ``simulated``, ``model``,
``stylisticbias.report_id`` (one per report invocation), ``stylisticbias.report_digest`` and,
under DVC, ``dvc.exp_name``.

**No duplicates on rerun**: each run is also tagged ``stylisticbias.run_key``, a digest of what
it records (report digest, run kind, model, logged params, sweep, DVC experiment). Once a run has
finished, the older runs with its key (an interrupted attempt, or an earlier ``dvc repro -f
track``) are deleted, so the experiment keeps exactly one run per model and one comparison run
per report. Run creation reuses :func:`stylisticbias.tracking.start_run` (bounded retries and
timeouts, store failures as one line).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import uuid
import warnings
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from stylisticbias.analysis.headline import flat, model_headline
from stylisticbias.errors import StylisticBiasError
from stylisticbias.report import figures as F
from stylisticbias.report.inputs import ModelInfo, ReportInputs
from stylisticbias.report.markdown import FigureRecord
from stylisticbias.report.mlflow_params import run_params
from stylisticbias.report.paper_compare import Comparison
from stylisticbias.report.plots_data import category_by_model, scenario_frame
from stylisticbias.report.provenance import combined_digest
from stylisticbias.report.run_metrics import interval_metrics, official_metrics
from stylisticbias.score_store import partition_dir, read_model_scores
from stylisticbias.spec import Config
from stylisticbias.tracking import (
    bounded,
    delete_other_runs,
    ensure_experiment,
    log_metrics,
    log_params,
    preflight,
    runs_url,
    start_run,
    tracking_cfg,
    tracking_spec,
)
from stylisticbias.tracking import (
    resolve_tracking_uri as resolve_tracking_uri,  # re-exported
)
from stylisticbias.tracking.grouping import (  # SWEEP_ENV, TAG_KIND, TAG_SWEEP re-exported
    SWEEP_ENV as SWEEP_ENV,
)
from stylisticbias.tracking.grouping import (
    TAG_EXP_NAME,
    TAG_KIND,
    TAG_SWEEP,
    dvc_exp_name,
    find_or_create_parent,
    sweep_id,
)

log = logging.getLogger(__name__)

TAG_REPORT = "stylisticbias.report_id"
TAG_DIGEST = "stylisticbias.report_digest"
TAG_KEY = "stylisticbias.run_key"
#: the model label of the analysis tables' rows pooled over all models
POOLED = "All"
#: the most metrics a run page shows (the headline with its intervals; the rest is a table)
MAX_RUN_METRICS = 30
#: the logged table of every number of a run (``metric``, ``value``)
ALL_METRICS_TABLE = "tables/metrics_all.json"
#: a model run's headline at the artifact root: MLflow's compare view (which lists top-level
#: files only) lines up the same file of two runs
HEADLINE_ARTIFACT = "headline.json"
_KEY_BAD = re.compile(r"[^0-9A-Za-z_\-. /]+")


def flatten_metrics(d: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Nested ``{"vs": {"age": 0.1}}`` -> ``{"vs.age": 0.1}``; finite numbers only."""
    out: dict[str, float] = {}
    for k, v in d.items():
        key = _KEY_BAD.sub("_", f"{prefix}{k}")
        if isinstance(v, Mapping):
            out.update(flatten_metrics(v, key + "."))
        elif isinstance(v, int | float) and math.isfinite(float(v)):
            out[key] = float(v)
    return out


def _replace_older(experiment_id: str, key: str, keep: str) -> None:
    gone = delete_other_runs(experiment_id, TAG_KEY, key, keep)
    if gone:
        log.info("replaced %d earlier run(s) of the same report: %s", len(gone), ", ".join(gone))


def run_key(**parts: Any) -> str:
    """md5 of ``parts`` (JSON, keys sorted): the identity of a report run across reruns."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.md5(blob).hexdigest()


def _model_dataset(inputs: ReportInputs, m: ModelInfo, scores_dir: str) -> None:
    import mlflow

    versions = [v for v in inputs.settings.data_versions if not v.path.startswith(scores_dir)]
    rel = partition_dir(scores_dir, m.name).as_posix()
    versions += [v for v in inputs.settings.data_versions if v.path in (rel, scores_dir)]
    df = read_model_scores(inputs.root / scores_dir, m.name, check=False)
    with warnings.catch_warnings():
        # "source can be interpreted in multiple ways", "schema contains integer column(s)"
        warnings.simplefilter("ignore", UserWarning)
        ds = mlflow.data.from_pandas(
            df, source=rel, name=f"scores/{m.name}", digest=combined_digest(versions)
        )
        # MLflow infers an object column's type element by element (seconds per model); the
        # table is validated, so one row per column tells its type, and NaNs its ``required``
        ds.__dict__["schema"] = frame_schema(df)
        mlflow.log_input(ds, context="scores")
    # keyed by role, not path (a model's partition is data/scores/model=<name>): the same tag
    # keys in every model run, so the compare view lines them up
    mlflow.set_tags(
        {
            f"data.{_data_role(v.path, scores_dir)}": f"{v.md5} ({v.path}, {v.source})"
            for v in versions
        }
    )


def frame_schema(df: pd.DataFrame, sample: int = 64) -> Any:
    """The MLflow schema of a validated table ``df``: each column's type from its first
    ``sample`` non-missing values (a validated column holds one type), ``required`` from all
    of it. The same schema MLflow infers from the whole table, without a pass per element."""
    from mlflow.types.schema import ColSpec, Schema
    from mlflow.types.utils import _infer_pandas_column

    cols = []
    for name in df.columns:
        col = df[name]
        present = col.dropna()
        kind = _infer_pandas_column((present if len(present) else col).iloc[:sample])
        cols.append(ColSpec(kind, str(name), required=not bool(col.isna().any())))
    return Schema(cols)


def _data_role(path: str, scores_dir: str) -> str:
    """``data/faces`` -> ``faces``; the model's score partition -> ``scores``."""
    if path == scores_dir or path.startswith(scores_dir.rstrip("/") + "/"):
        return "scores"
    return _KEY_BAD.sub("_", Path(path).name.replace("=", "_"))


def _model_figures(inputs: ReportInputs, label: str, scen: pd.DataFrame, sim: bool) -> None:
    import mlflow

    sbs = inputs.tables["sbs_by_scenario"]
    rows = sbs[sbs["model"].astype(str) == label] if "model" in sbs else sbs.iloc[0:0]
    if not rows.empty:
        fig = F.fig_scenarios(scenario_frame(rows, scen), sim)
        fig.suptitle(f"{label}: SBS across scenarios, sorted ascending", fontweight="bold")
        mlflow.log_figure(fig, "figures/sbs_by_scenario.png")
        F.plt.close(fig)
    cat = inputs.tables["sbs_by_category_model"]
    if "model" in cat and (cat["model"].astype(str) == label).any():
        wide = category_by_model(cat[cat["model"].astype(str) == label], "sbs_by_category_model")
        fig = F.fig_heatmap(wide, f"{label}: SBS per attribute category", sim)
        mlflow.log_figure(fig, "figures/sbs_by_category.png")
        F.plt.close(fig)


def _model_tables(inputs: ReportInputs, label: str) -> None:
    """The model's rows of every per-model table, under the same name in every model run (an
    empty table where the model has no rows)."""
    import mlflow

    for name, df in sorted(inputs.tables.items()):
        if "model" in df.columns:
            rows = df[df["model"].astype(str) == label]
            mlflow.log_table(rows.reset_index(drop=True), f"tables/{name}.json")


def all_metrics(inputs: ReportInputs, label: str, name: str | None = None) -> dict[str, float]:
    """Every interval of the tables (point + ``.ci_low`` / ``.ci_high``) and ``metrics.json``'s
    entry (whose points, written with more digits than the tables, win)."""
    entry = inputs.metrics.get(label, inputs.metrics.get(name or label))
    points = flatten_metrics(entry) if isinstance(entry, Mapping) else {}
    return interval_metrics(inputs.tables, label) | points


def headline_metrics(inputs: ReportInputs, label: str) -> dict[str, float]:
    """The run page's metrics: the headline of ``label`` with its intervals."""
    a = inputs.analysis
    head = flat(model_headline(inputs.tables, label, a.alpha, a.ci))
    if len(head) > MAX_RUN_METRICS:  # a headline grown past the run page's budget
        raise StylisticBiasError(
            f"{len(head)} headline metrics for {label}; at most {MAX_RUN_METRICS} fit a run "
            "page (stylisticbias.analysis.headline: mark the rest tail=True)"
        )
    return head


def _log_all(metrics: Mapping[str, float]) -> None:
    import mlflow

    keys = sorted(metrics)
    table = pd.DataFrame({"metric": keys, "value": [metrics[k] for k in keys]})
    mlflow.log_table(table, ALL_METRICS_TABLE)


def log_report(
    config: Config,
    inputs: ReportInputs,
    figs: list[FigureRecord],
    cmp: Comparison | None,
    scen: pd.DataFrame,
    root: Path,
    report_digest: str = "",
) -> dict[str, str]:
    """Log the report to MLflow; returns ``{run name: run id}`` (plus ``sweep`` if any).

    ``report_digest`` (``track._report_digest``) identifies the report: a rerun with the same
    report and params replaces its earlier runs instead of adding to them.
    """
    spec = tracking_spec({"tracking": asdict(config.tracking)})
    with bounded(spec):
        preflight(spec)
        return _log_report(config, inputs, figs, cmp, scen, root, report_digest)


def _log_report(
    config: Config,
    inputs: ReportInputs,
    figs: list[FigureRecord],
    cmp: Comparison | None,
    scen: pd.DataFrame,
    root: Path,
    report_digest: str,
) -> dict[str, str]:
    import mlflow

    composed = asdict(config)  # the composed configuration, logged as written (run_params)
    cfg = tracking_cfg(composed)
    params = {**composed, "tracking": cfg}
    exp_id = ensure_experiment(tracking_spec(params))
    s = inputs.settings
    sha = s.git_commit
    base_tags: dict[str, Any] = {TAG_REPORT: uuid.uuid4().hex[:12], TAG_DIGEST: report_digest}
    if sha:
        base_tags |= {"git_commit": sha, "mlflow.source.git.commit": sha}
    exp_name = dvc_exp_name()
    if exp_name:
        base_tags[TAG_EXP_NAME] = exp_name
    ids: dict[str, str] = {}
    sweep = sweep_id()
    if sweep:
        parent = find_or_create_parent(exp_id, sweep, {"git_commit": sha or ""})
        base_tags |= {TAG_SWEEP: sweep, "mlflow.parentRunId": parent}
        ids["sweep"] = parent
    suffix = f" @{exp_name}" if exp_name else ""
    common = run_params(params, inputs)
    key_parts = {"digest": report_digest, "params": common, "sweep": sweep, "exp": exp_name}
    scores_dir = str(params["paths"]["scores"])
    for m in s.models:
        key = run_key(kind="model", model=m.label, **key_parts)
        tags = {**base_tags, TAG_KIND: "model", "model": m.label, "simulated": m.simulated}
        with start_run(
            tracking_spec(params), run_name=f"{m.label}{suffix}", tags={**tags, TAG_KEY: key}
        ) as run:
            log_params(
                {**common, "model": m.label, "model.config": m.name, "model.hub_id": m.hub_id}
            )
            head = headline_metrics(inputs, m.label)
            log_metrics(head)
            mlflow.log_dict(dict(sorted(head.items())), HEADLINE_ARTIFACT)
            _log_all(all_metrics(inputs, m.label, m.name))
            _model_dataset(inputs, m, scores_dir)
            _model_tables(inputs, m.label)
            _model_figures(inputs, m.label, scen, m.simulated)
            ids[m.label] = run.info.run_id
        _replace_older(exp_id, key, ids[m.label])
    key = run_key(kind="comparison", **key_parts)
    tags = {**base_tags, TAG_KIND: "comparison", "model": "all", "simulated": s.simulated}
    with start_run(
        tracking_spec(params), run_name=f"comparison{suffix}", tags={**tags, TAG_KEY: key}
    ) as run:
        log_params(common)
        pooled = {k: v for k, v in inputs.metrics.items() if s.model(k) is None}
        summary = {"n_models": float(len(s.models))}
        summary |= headline_metrics(inputs, POOLED)  # the tables' all-models rows
        # the released code's analyses (effect sizes, mixed model, agreement) join the table
        official = official_metrics(inputs.tables)
        _log_all(flatten_metrics(pooled) | interval_metrics(inputs.tables, POOLED) | official)
        if cmp is not None:
            for r in cmp.summary.to_dict("records"):
                summary |= flatten_metrics(
                    {k: v for k, v in r.items() if k != "table"}, f"paper.{r['table']}."
                )
            mlflow.log_table(cmp.cells, "tables/paper_comparison.json")
            mlflow.log_table(cmp.claims, "tables/paper_claims.json")
        log_metrics(summary)
        pooled_tables = (
            "profile_agreement",
            "model_pair_regressions",
            "cross_model_variance",
            "mixed_model",
            "effect_sizes",
            "negativity_asymmetry",
            "scenario_agreement",
        )
        for name in pooled_tables:
            df = inputs.table(name)
            if df is not None and not df.empty:
                mlflow.log_table(df, f"tables/{name}.json")
        for f in figs:
            mlflow.log_artifact(str(f.path.resolve()), "figures")
        readme = (root / str(params["paths"]["reports"]) / "README.md").resolve()
        if readme.exists():
            mlflow.log_artifact(str(readme))
        ids["comparison"] = run.info.run_id
    _replace_older(exp_id, key, ids["comparison"])
    log.info(
        "logged %d model run(s) + comparison to %s (experiment %s%s); runs at %s",
        len(s.models),
        cfg["tracking_uri"],
        cfg["experiment_name"],
        f", sweep {sweep}" if sweep else "",
        runs_url(tracking_spec(params), exp_id),
    )
    return ids
