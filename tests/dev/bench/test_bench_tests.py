"""The test-tier benchmark: pytest's summary and --durations block are read back, a make target
is timed with its load average."""

from __future__ import annotations

from stylisticbias_dev.bench import tests as bench_tests

OUTPUT = """
============================= slowest 3 durations ==============================
12.50s call     tests/a/test_x.py::test_one[p1]
3.01s setup    tests/b/test_y.py::test_two
0.40s teardown tests/b/test_y.py::test_two
======================= 7 passed, 1 skipped in 20.05s =======================
"""


def test_slowest_reads_the_durations_block_in_order() -> None:
    assert bench_tests.slowest(OUTPUT, 2) == {
        "call tests/a/test_x.py::test_one[p1]": 12.5,
        "setup tests/b/test_y.py::test_two": 3.01,
    }
    assert bench_tests._SUMMARY.findall(OUTPUT)[-1][0] == "7 passed, 1 skipped"


def test_run_tier_times_a_make_target_with_its_load() -> None:
    entry = bench_tests.run_tier("help", durations=0)
    assert entry["command"] == "make help" and entry["exit_status"] == 0
    assert entry["seconds"] >= 0 and entry["pytest_summary"] is None
    assert len(entry["load_avg_start"]) == 3 and len(entry["load_avg_end"]) == 3
    assert entry["date"].endswith("+00:00") and entry["slowest"] == {}


def test_cpu_hog_processes_run_inside_the_block_and_stop_after() -> None:
    hog = bench_tests.CpuHog(2)
    with hog:
        assert all(p.is_alive() for p in hog._procs)
    assert not any(p.is_alive() for p in hog._procs)


def test_under_load_runs_each_target_repeatedly_and_records_every_run(
    tmp_path, monkeypatch
) -> None:
    calls: list[str] = []

    def fake_run_tier(target: str, durations: int) -> dict:
        calls.append(target)
        return {
            "command": f"make {target}",
            "exit_status": 1 if len(calls) == 3 else 0,
            "seconds": 1.0,
            "pytest_summary": "1 passed",
        }

    monkeypatch.setattr(bench_tests, "run_tier", fake_run_tier)
    monkeypatch.setattr(bench_tests, "machine_info", lambda: {"cpu": "test"})
    out = tmp_path / "tests.json"
    rc = bench_tests._under_load({}, out, ["test"], hog=0, repeat=3, durations=0, warmup=0)
    import json

    got = json.loads(out.read_text())["under_load"]
    assert calls == ["test"] * 3 and [r["run"] for r in got["runs"]] == [1, 2, 3]
    assert rc == 1 and got["all_passed"] is False and got["hog_processes"] == 0
