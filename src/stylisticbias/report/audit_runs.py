"""The audit in MLflow (the ``track`` stage, :func:`stylisticbias.report.track.track_report`):
one parent run per judged model and one cross-model ``audit`` run, under which every
protocol's runs are logged as children (:func:`stylisticbias.tracking.child_runs`).

* **A model's parent** (``run_kind = model-audit``, run name = the model): every protocol's
  headline as metrics (``<protocol>.<metric>`` with ``.ci_low`` / ``.ci_high``), and at its
  artifact root ``headline.json`` (every finding of every protocol about the model) and
  ``bias_card.md`` (its card, ``reports/audit/<model>.md``): the same names in every model's
  parent, so MLflow's compare view (which lists top-level files only) lines up two models'
  cards and headlines.
* **The audit run** (``run_kind = audit``, ``model = all``): the cross-protocol leaderboard
  (``leaderboard.csv``, ``leaderboard.html``) and the audit's ``README.md`` at its root,
  ``n_models`` and ``n_protocols``; the protocols' comparison runs and the SODA run are its
  children.

Reads only the files the ``audit`` stage wrote (``<paths.audit>``). A rerun replaces the earlier
runs of the same audit (``stylisticbias.run_key``: the audit's digest, the run's kind and
model, the sweep and DVC experiment), as the protocols' runs do.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stylisticbias.report.mlflow_log import (
    HEADLINE_ARTIFACT,
    MAX_RUN_METRICS,
    TAG_DIGEST,
    TAG_KEY,
    TAG_REPORT,
    run_key,
)
from stylisticbias.spec import Config

log = logging.getLogger(__name__)

#: ``run_kind`` of a model's parent run and of the cross-model run
MODEL_KIND, AUDIT_KIND = "model-audit", "audit"
#: a model parent's card at its artifact root
CARD_ARTIFACT = "bias_card.md"
#: the audit run's files at its artifact root (from ``<paths.audit>``)
AUDIT_FILES = ("README.md", "leaderboard.csv", "leaderboard.html")


def parent_metrics(protocols: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    """A model parent's metrics: each protocol's headline finding as ``<protocol>.<key>``
    with its interval (``.ci_low`` / ``.ci_high``)."""
    out: dict[str, float] = {}
    for p, found in protocols.items():
        for f in found:
            if not f.get("headline") or f.get("value") is None:
                continue
            out[f"{p}.{f['key']}"] = float(f["value"])
            for k in ("ci_low", "ci_high"):
                if f.get(k) is not None:
                    out[f"{p}.{f['key']}.{k}"] = float(f[k])
    return dict(list(out.items())[:MAX_RUN_METRICS])


def log_audit_parents(config: Config, audit_dir: Path, digest: str) -> tuple[dict[str, str], str]:
    """Log the model parents and the audit run (see the module doc); returns ``({model: its
    parent's run id}, the audit run's id)``."""
    from stylisticbias.tracking import bounded, preflight, tracking_spec

    spec = tracking_spec({"tracking": asdict(config.tracking)})
    with bounded(spec):
        preflight(spec)
        return _log(config, audit_dir, digest)


def _log(config: Config, audit_dir: Path, digest: str) -> tuple[dict[str, str], str]:
    import mlflow

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
    doc = json.loads((audit_dir / "findings.json").read_text(encoding="utf-8"))
    exp_name, sweep = dvc_exp_name(), sweep_id()
    base: dict[str, Any] = {TAG_REPORT: uuid.uuid4().hex[:12], TAG_DIGEST: digest}
    sha = git_commit()
    if sha:
        base["mlflow.source.git.commit"] = sha
    if exp_name:
        base[TAG_EXP_NAME] = exp_name
    suffix = f" @{exp_name}" if exp_name else ""
    key_parts = {"digest": digest, "sweep": sweep, "exp": exp_name}
    protocols = list(doc["protocols"])
    params = {"protocols": protocols, "models": list(doc["models"])}

    def finished(key: str, run: Any) -> str:
        gone = delete_other_runs(run.info.experiment_id, TAG_KEY, key, run.info.run_id)
        if gone:
            log.info("replaced %d earlier run(s) of the same audit", len(gone))
        return str(run.info.run_id)

    parents: dict[str, str] = {}
    for model, entry in doc["models"].items():
        key = run_key(kind=MODEL_KIND, model=model, **key_parts)
        tags = {
            **base,
            TAG_KIND: MODEL_KIND,
            "model": model,
            "simulated": bool(entry["simulated"]),
            TAG_KEY: key,
        }
        with start_run(spec, run_name=f"{model}{suffix}", tags=tags, sweep=sweep) as run:
            log_params({**params, "model": model})
            log_metrics(parent_metrics(entry["protocols"]))
            mlflow.log_dict({"model": model, "level": doc["level"], **entry}, HEADLINE_ARTIFACT)
            card = audit_dir / f"{model}.md"
            if card.is_file():
                mlflow.log_text(card.read_text(encoding="utf-8"), CARD_ARTIFACT)
            parents[model] = finished(key, run)
    key = run_key(kind=AUDIT_KIND, **key_parts)
    tags = {
        **base,
        TAG_KIND: AUDIT_KIND,
        "model": "all",
        "simulated": all(bool(e["simulated"]) for e in doc["models"].values()),
        TAG_KEY: key,
    }
    with start_run(spec, run_name=f"audit{suffix}", tags=tags, sweep=sweep) as run:
        log_params(params)
        log_metrics({"n_models": float(len(doc["models"])), "n_protocols": float(len(protocols))})
        for name in AUDIT_FILES:
            if (audit_dir / name).is_file():
                mlflow.log_artifact(str((audit_dir / name).resolve()))
        audit_id = finished(key, run)
    log.info("audit: %d model parent run(s) + the audit run logged", len(parents))
    return parents, audit_id
