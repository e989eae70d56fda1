"""Resuming a judge run: after SIGKILL, corrupt shards, or a changed configuration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from judge_tables import make_tables

from stylisticbias.judge.run import judge_items, run_judge, run_log_path
from stylisticbias.schemas import JUDGMENTS, read_table

MODEL = "simulated-strong"
ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys, time
    from stylisticbias.judge.simulated import SimulatedJudgeEngine
    from stylisticbias.judge.run import run_judge

    judge = SimulatedJudgeEngine.judge
    def slow_judge(self, items, images):
        time.sleep(0.25)
        return judge(self, items, images)
    SimulatedJudgeEngine.judge = slow_judge
    params = json.load(open(sys.argv[1]))
    run_judge("simulated-strong", params, progress=False, out_dir=sys.argv[2])
    """
)


def _judgments(out: Path) -> pd.DataFrame:
    return read_table(out / "judgments.parquet", JUDGMENTS)


def test_sigkill_mid_run_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    params = make_tables(tmp_path, 4)
    params["engine"] = {**params["engine"], "image_batch_size": 2}
    n_items = len(judge_items(params))
    ref = _judgments(run_judge(MODEL, params, progress=False, out_dir=tmp_path / "ref"))

    out = tmp_path / "killed"
    (tmp_path / "params.json").write_text(json.dumps(params))
    (tmp_path / "child.py").write_text(CHILD)
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "child.py"), str(tmp_path / "params.json"), str(out)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    shards = out / "shards"
    deadline = time.monotonic() + 120
    try:
        while len(list(shards.glob("rank*.parquet"))) < 3:
            assert proc.poll() is None, "child finished before it could be killed"
            assert time.monotonic() < deadline, "no shards appeared"
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    written = len(list(shards.glob("rank*.parquet")))
    assert 3 <= written < -(-n_items // 2), "the run must be killed mid-way"
    assert not (out / "judgments.parquet").exists()

    resumed = _judgments(run_judge(MODEL, params, progress=False, out_dir=out))
    pd.testing.assert_frame_equal(resumed, ref)
    run = json.loads(run_log_path(out).read_text())
    assert (
        run["images_resumed"] >= 2 * 3 and run["images_judged"] + run["images_resumed"] == n_items
    )


def test_corrupt_and_truncated_shards_are_redone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    params = make_tables(tmp_path, 3)
    params["engine"] = {**params["engine"], "image_batch_size": 4}
    out = run_judge(MODEL, params, progress=False)
    ref = _judgments(out)
    shards = sorted((out / "shards").glob("rank*.parquet"))
    redo = set(pd.read_parquet(shards[0])["image_id"]) | set(pd.read_parquet(shards[1])["image_id"])
    data = shards[0].read_bytes()
    shards[0].write_bytes(data[: len(data) // 2])  # truncated by a crash
    bad_rows = pd.read_parquet(shards[1]).iloc[:-5]  # readable but incomplete
    bad_rows.to_parquet(shards[1], index=False)
    (out / "shards" / ".tmp-rank000-b000099-deadbeef0000.parquet").write_bytes(b"partial")
    (out / "judgments.parquet").unlink()

    caplog.clear()
    again = _judgments(run_judge(MODEL, params, progress=False))
    pd.testing.assert_frame_equal(again, ref)
    assert shards[0].name in caplog.text and shards[1].name in caplog.text
    assert not list((out / "shards").glob(".tmp-*"))
    run = json.loads(run_log_path(out).read_text())
    assert run["images_judged"] == len(redo)
    # a second resume has nothing to do and keeps the records
    pd.testing.assert_frame_equal(_judgments(run_judge(MODEL, params, progress=False)), ref)


def test_changed_configuration_discards_old_shards(tmp_path: Path) -> None:
    params = make_tables(tmp_path, 2)
    out = run_judge(MODEL, params, progress=False)
    params["judge"] = {**params["judge"], "seeds": [1, 2]}
    df = _judgments(run_judge(MODEL, params, progress=False))
    assert sorted(df["seed"].unique()) == [1, 2]
    assert json.loads(run_log_path(out).read_text())["images_resumed"] == 0
