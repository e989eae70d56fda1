"""A judge run with nothing to do returns before reading its records.

A setting only another stage reads (``judge.undecided_warn``: the scores stage) or a label must
not make the judge re-read and re-consolidate every record to write the same bytes: when the
output already holds exactly this configuration's records of this run's images, the stage
rewrites only its run log (as a run that judged nothing writes it) and leaves
``judgments.parquet`` untouched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from judge_tables import make_tables

import stylisticbias.judge.run as judge_run
from stylisticbias.judge.run import run_judge
from stylisticbias.judge.summary import run_log_path
from stylisticbias.spec.parse import config_from_params

MODEL = "simulated-strong"


def _changed(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with a setting the judge does not read (the scores stage's)."""
    return {**params, "judge": {**params["judge"], "undecided_warn": 0.03}}


def _stat(path: Path) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_ino, st.st_mtime_ns, st.st_size


def _count(monkeypatch: pytest.MonkeyPatch, name: str, calls: list[str]) -> None:
    real = getattr(judge_run, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(judge_run, name, counted)


def test_nothing_to_do_reads_and_writes_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = make_tables(tmp_path, 2)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    # what the stage wrote before it could tell (every record read, folded, written again)
    with monkeypatch.context() as m:
        m.setattr(judge_run, "up_to_date", lambda *a: None, raising=False)
        run_judge(MODEL, config_from_params(_changed(params)), progress=False)
    folded = run_log_path(out).read_text()
    before = _stat(out / "judgments.parquet")
    ref = (out / "judgments.parquet").read_bytes()

    calls: list[str] = []
    for name in ("consolidate", "finished_records", "switch_configuration"):
        _count(monkeypatch, name, calls)
    run_judge(MODEL, config_from_params(_changed(params)), progress=False)
    assert calls == []  # no record read, nothing folded, the fingerprint file left alone
    assert _stat(out / "judgments.parquet") == before  # not rewritten (same inode, same mtime)
    assert (out / "judgments.parquet").read_bytes() == ref
    assert run_log_path(out).read_text() == folded  # the run log a run judging nothing writes


def test_work_left_is_done_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard waiting to be folded in, or records the run log does not count: consolidated."""
    params = make_tables(tmp_path, 2)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    calls: list[str] = []
    _count(monkeypatch, "consolidate", calls)
    (out / "shards").mkdir()
    (out / "shards" / "_rank0.json").write_text("{}")
    run_judge(MODEL, config_from_params(params), progress=False)
    assert calls == ["consolidate"] and not (out / "shards").exists()
    log = run_log_path(out)
    log.write_text(log.read_text().replace('"n_records": ', '"n_records": 1'))
    run_judge(MODEL, config_from_params(params), progress=False)
    assert calls == ["consolidate"] * 2


def test_nothing_to_do_is_known_before_an_engine_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine whose records depend on its settings alone (no ``fingerprint()``: hf) is not
    built -- its weights not loaded -- when there is nothing to judge."""
    from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine

    monkeypatch.delattr(SimulatedJudgeEngine, "fingerprint")
    params = make_tables(tmp_path, 2)
    out = run_judge(MODEL, config_from_params(params), progress=False)
    before = _stat(out / "judgments.parquet")

    def no_engine(*args: Any) -> None:
        raise AssertionError("an engine was built with nothing to judge")

    monkeypatch.setattr(judge_run, "make_engine", no_engine)
    run_judge(MODEL, config_from_params(_changed(params)), progress=False)
    assert _stat(out / "judgments.parquet") == before
