"""The SODA audit logged to MLflow: headline with intervals (checked against SciPy and
statsmodels), every number in ``tables/metrics_all.json``, the tables as logged tables, one run
per audit on rerun."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.report.mlflow_log import ALL_METRICS_TABLE, MAX_RUN_METRICS
from stylisticbias.report.soda_tracking import (
    cluster_share_ci,
    log_soda,
    read_audit,
    skew_mean_ci,
)
from stylisticbias.tracking import tracking_spec

GROUPS = {"age": ["young adults", "elderly"], "gender": ["men", "women"]}
SETTINGS = {
    "objects": ["car", "cup", "sofa"],
    "alpha": 0.05,
    "annotator": "sim",
    "n_perm": 100,
    "mitigation": "diverse",
}


def _audit(root: Path) -> Path:
    rs = np.random.RandomState(3)
    out = root / "soda"
    (out / "tables").mkdir(parents=True)
    bds = [
        {
            "object": o,
            "dimension": d,
            "group": g,
            "bds": float(rs.rand() / 5),
            "pval": float(rs.rand() / 10),
            "significant": False,
            "n_base": 10,
            "n_group": 10,
            "planted_shift": g == "women",
        }
        for o in SETTINGS["objects"]
        for d, gs in GROUPS.items()
        for g in gs
    ]
    cds = [
        {"object": o, "dimension": d, "variant": v, "attribute": a, "cds": float(rs.rand())}
        for o in SETTINGS["objects"]
        for d in GROUPS
        for v in ("original", "diverse")
        for a in ("colour", "all")
    ]
    vac = [
        {"object": o, "condition": c, "vac": float(rs.rand()), "n": 10}
        for o in SETTINGS["objects"]
        for c in ("base", "gender:women")
    ]
    mit = [
        {
            "metric": "cds",
            "dimension": "all",
            "variant": "diverse",
            "n": 6,
            "mean_original": 0.3,
            "mean_mitigated": 0.2,
            "change_pct": -33.3,
            "t": 4.0,
            "pval": 0.01,
        }
    ]
    for name, rows in (
        ("soda_bds", bds),
        ("soda_cds", cds),
        ("soda_vac", vac),
        ("soda_mitigation", mit),
    ):
        pd.DataFrame(rows).to_csv(out / "tables" / f"{name}.csv", index=False)
    summary = {
        "enabled": True,
        "objects": SETTINGS["objects"],
        "planted_found": 3,
        "planted_tests": 3,
        "null_rejected": 1,
        "null_tests": 9,
        "bds_by_group": {"men": 0.1},
    }
    (out / "metrics.json").write_text(json.dumps(summary))
    (out / "README.md").write_text("# SODA audit\n")
    return out


def test_soda_run_headline_intervals_tables_and_rerun(tmp_path: Path, monkeypatch) -> None:
    soda = _audit(tmp_path)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    spec = tracking_spec(
        {"tracking": {"enabled": True, "experiment_name": "soda-test", "tracking_uri": uri}}
    )
    run_id = log_soda(spec, soda, SETTINGS, 0.95)
    assert log_soda(spec, soda, SETTINGS, 0.95) is not None  # a rerun replaces the first run
    mlflow.set_tracking_uri(spec.tracking_uri)
    exp = mlflow.get_experiment_by_name("soda-test")
    runs = mlflow.search_runs([exp.experiment_id])
    assert len(runs) == 1 and runs.iloc[0]["tags.stylisticbias.run_kind"] == "soda"
    run = mlflow.MlflowClient().get_run(runs.iloc[0]["run_id"])
    assert run.info.run_id != run_id
    m = run.data.metrics
    assert len(m) <= MAX_RUN_METRICS

    bds = pd.read_csv(soda / "tables/soda_bds.csv")
    per_obj = bds.groupby("object")["bds"].mean().to_numpy()
    lo, hi = stats.t.interval(0.95, len(per_obj) - 1, loc=per_obj.mean(), scale=stats.sem(per_obj))
    assert np.isclose(m["bds"], per_obj.mean())
    assert np.isclose(m["bds.ci_low"], lo) and np.isclose(m["bds.ci_high"], hi)
    age = bds[bds["dimension"] == "age"].groupby("object")["bds"].mean()
    assert np.isclose(m["bds.age"], age.mean())
    hits = int((bds["pval"] < 0.05).sum())
    per = (bds["pval"] < 0.05).groupby(bds["object"]).sum()
    share = cluster_share_ci("significant_share", per, bds.groupby("object").size(), 0.95)
    assert np.isclose(m["significant_share"], hits / len(bds))
    assert np.isclose(m["significant_share.ci_low"], share["significant_share.ci_low"])
    assert np.isclose(m["significant_share.ci_high"], share["significant_share.ci_high"])
    vac = pd.read_csv(soda / "tables/soda_vac.csv").groupby("object")["vac"].mean()
    want = skew_mean_ci("vac", vac, 0.95)
    assert np.isclose(m["vac.ci_low"], want["vac.ci_low"])
    assert np.isclose(m["vac.ci_high"], want["vac.ci_high"])
    cds = pd.read_csv(soda / "tables/soda_cds.csv")
    orig = cds[(cds["attribute"] == "all") & (cds["variant"] == "original")]
    assert np.isclose(m["cds"], orig.groupby("object")["cds"].mean().mean())
    assert m["mitigation.cds.change_pct"] == -33.3 and m["mitigation.cds.pval"] == 0.01
    assert run.data.params["soda.alpha"] == "0.05"

    monkeypatch.chdir(tmp_path)
    client = mlflow.MlflowClient()
    arts = {a.path for a in client.list_artifacts(run.info.run_id, "tables")}
    names = ("soda_bds", "soda_cds", "soda_vac", "soda_mitigation")
    assert {f"tables/{n}.json" for n in names} | {ALL_METRICS_TABLE} <= arts
    tail = mlflow.load_table(ALL_METRICS_TABLE, run_ids=[run.info.run_id])
    keys = set(tail["metric"])
    assert {
        "bds.gender.women",
        "bds.gender.women.ci_low",
        "cds.age",
        "vac.base",
        "planted_found",
        "null_tests",
    } <= keys
    assert {a.path for a in client.list_artifacts(run.info.run_id, "soda")} == {
        "soda/README.md",
        "soda/metrics.json",
    }


def test_audit_off_is_not_logged(tmp_path: Path) -> None:
    soda = tmp_path / "soda"
    soda.mkdir()
    (soda / "metrics.json").write_text(json.dumps({"enabled": False, "objects": []}))
    assert read_audit(soda) is None
    assert read_audit(tmp_path / "missing") is None
    spec = tracking_spec(
        {"tracking": {"enabled": True, "tracking_uri": f"sqlite:///{tmp_path}/m.db"}}
    )
    assert log_soda(spec, soda, SETTINGS, 0.95) is None


def test_track_stage_logs_the_soda_demo_audit(tmp_path: Path, monkeypatch) -> None:
    """The track stage's SODA step on the composed ``soda-demo`` configuration (its typed spec,
    not a hand-made mapping): the interval level comes from ``analysis.bootstrap.ci``."""
    from stylisticbias.config import compose
    from stylisticbias.report.track import _track_soda
    from stylisticbias.spec.parse import config_from_params

    monkeypatch.chdir(tmp_path)  # the store's artifact root (./mlruns)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    overrides = ["experiment=soda-demo", "paths.soda=soda", "tracking.enabled=true"]
    overrides += [f"tracking.tracking_uri={uri}", "tracking.experiment_name=soda-demo"]
    params = compose(overrides)
    config = config_from_params(params)
    _audit(tmp_path)
    record: dict = {}
    run_log: dict = {"runs": {}}
    _track_soda(config, tmp_path, record, run_log)
    run = mlflow.MlflowClient(uri).get_run(run_log["runs"]["soda"])
    assert run.data.params["analysis.ci"] == str(config.analysis.bootstrap.ci)
    assert record["soda_digest"]
