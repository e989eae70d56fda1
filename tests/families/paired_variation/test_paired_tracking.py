"""A paired-variation report in MLflow (the family's ``track`` hook): one run per judged model
and a comparison run; each model's headline is its own rows of the tables (the halo rate with
its interval), the same keys in every model run, every interval in ``tables/metrics_all.json``
and the headline at the artifact root (MLflow's compare view)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from paired_scores import simulated_scores

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import ROOT, compose
from stylisticbias.families.paired_variation.analysis.run import analyze_paired, write_paired
from stylisticbias.families.paired_variation.report.report import build_paired_report
from stylisticbias.family import FAMILIES
from stylisticbias.report.mlflow_log import ALL_METRICS_TABLE
from stylisticbias.spec.parse import config_from_params
from stylisticbias.tracking.grouping import TAG_KIND

MODELS = {"simulated-halo-strong": 0.25, "simulated-halo-weak": 0.1}


def test_track_hook_logs_one_run_per_model_and_a_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the store's artifact root (./mlruns)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    overrides = ["experiment=beauty-demo", "tracking.enabled=true"]
    overrides += [f"tracking.tracking_uri={uri}", "tracking.experiment_name=beauty"]
    params = compose(overrides)
    params["paths"]["reports"] = "reports"
    bench = benchmark_from_params(params)
    shutil.copytree(ROOT / "conf" / "reference", tmp_path / "conf" / "reference")
    scores = {
        m: simulated_scores(bench, m, halo, i, faces=24)
        for i, (m, halo) in enumerate(MODELS.items())
    }
    tables = analyze_paired(scores, bench, AnalysisSettings(n_resamples=50))
    write_paired(tables, tmp_path / "reports")
    config = config_from_params(params)
    build_paired_report(config, bench, tmp_path)

    run_log: dict = {"runs": {}}
    hook = FAMILIES.lookup("paired_variation", "test").hook("track")
    hook(config, tmp_path, bench, "digest", run_log)
    assert set(run_log["runs"]) == {*MODELS, "comparison"}

    client = mlflow.MlflowClient(uri)
    halo = pd.read_csv(tmp_path / "reports/tables/paired_halo.csv").set_index("model")
    keys = []
    for m in MODELS:
        run = client.get_run(run_log["runs"][m])
        assert run.data.tags[TAG_KIND] == "model" and run.data.tags["model"] == m
        got = run.data.metrics
        assert got["halo_rate"] == float(halo.loc[m, "halo_rate"])
        assert got["halo_rate.ci_low"] == float(halo.loc[m, "halo_rate_low"])
        assert got["halo_rate.ci_high"] == float(halo.loc[m, "halo_rate_high"])
        keys.append(set(got))
        dst = tmp_path / m
        dst.mkdir()
        head = client.download_artifacts(run.info.run_id, "headline.json", str(dst))
        assert json.loads(Path(head).read_text()) == got
        table = json.loads(
            Path(
                client.download_artifacts(run.info.run_id, ALL_METRICS_TABLE, str(dst))
            ).read_text()
        )
        flat = {r[0]: r[1] for r in table["data"]}
        bias = pd.read_csv(tmp_path / "reports/tables/paired_variation_bias.csv")
        row = bias[bias["model"] == m].iloc[0]
        key = f"paired_variation_bias.{row['scenario_id']}"
        assert flat[key] == float(row["shift"]) and flat[key + ".ci_high"] == row["shift_high"]
    assert keys[0] == keys[1]  # the same headline keys in every model run
    comparison = client.get_run(run_log["runs"]["comparison"])
    assert comparison.data.tags[TAG_KIND] == "comparison"
    names = {a.path for a in client.list_artifacts(comparison.info.run_id)}
    assert {"README.md", "tables", "figures"} <= names
