"""The judge stage's own MLflow logging under tracking faults: it gives up within seconds and
keeps the finished judgments (same bytes as a run with tracking off)."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest
from judge_tables import make_tables

from stylisticbias.judge.run import run_judge
from stylisticbias.judge.summary import run_log_path
from stylisticbias.spec.parse import config_from_params


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_tracking_keeps_judgments_and_gives_up_in_seconds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    params = make_tables(tmp_path, 2)
    params["tracking"] = {**params["tracking"], "enabled": False, "experiment_name": "judge-test"}
    ref = run_judge(
        "simulated-weak", config_from_params(params), progress=False, out_dir=tmp_path / "ref" / "m"
    )
    params["tracking"] = {
        **params["tracking"],
        "enabled": True,
        "experiment_name": "judge-test",
        "tracking_uri": f"http://127.0.0.1:{_closed_port()}",
        "max_retries": 1,
        "timeout_s": 1,
    }
    with caplog.at_level(logging.WARNING, logger="stylisticbias.judge"):
        out = run_judge(
            "simulated-weak",
            config_from_params(params),
            progress=False,
            out_dir=tmp_path / "down" / "m",
        )
    # given up by the bounded preflight (max_retries + 1 probes), not after MLflow's default
    # retries (~4 minutes); "refused", or on a machine too loaded to connect within
    # timeout_s, "did not answer": either way after the two bounded tries
    failed = [r.getMessage() for r in caplog.records if "MLflow logging failed" in r.getMessage()]
    assert len(failed) == 1 and "TrackingError" in failed[0], failed
    assert " after 2 tries (tracking.max_retries=1, tracking.timeout_s=1)" in failed[0], failed
    assert (out / "judgments.parquet").read_bytes() == (ref / "judgments.parquet").read_bytes()
    assert "mlflow_run_id" not in json.loads(run_log_path(out).read_text())


def test_corrupt_store_keeps_judgments(tmp_path: Path) -> None:
    params = make_tables(tmp_path, 2)
    db = tmp_path / "m.db"
    db.write_bytes(b"garbage, not SQLite" * 64)
    params["tracking"] = {
        **params["tracking"],
        "enabled": True,
        "experiment_name": "judge-test",
        "tracking_uri": f"sqlite:///{db}",
    }
    out = run_judge("simulated-weak", config_from_params(params), progress=False)
    assert (out / "judgments.parquet").exists()
    assert "mlflow_run_id" not in json.loads(run_log_path(out).read_text())
    assert db.read_bytes() == b"garbage, not SQLite" * 64  # the store is left for inspection
