"""Safe outputs: path checks, locks, atomic files and directories; the stages refuse bad values
and bad output paths in one line, before touching anything under data/ (or outside)."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stylisticbias.config import dump_params
from stylisticbias.errors import StylisticBiasError
from stylisticbias.output_paths import check_all_outputs, data_root, safe_member, stage_output
from stylisticbias.outputs import (
    OutputLock,
    atomic_dir,
    atomic_link,
    atomic_path,
    atomic_write_bytes,
    recover_dir,
)

ROOT = Path(__file__).resolve().parents[1]


def tree(path: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``path`` (hidden ones included)."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------- unit
def _params(**paths: str) -> dict:
    base = {
        "data": "data",
        "faces": "data/faces",
        "variations": "data/variations",
        "judgments": "data/judgments",
        "scores": "data/scores",
        "analysis_cache": "data/analysis",
        "reports": "reports/stylisticbias",
    }
    return {"protocol": "stylisticbias", "paths": {**base, **paths}}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("faces", "data", "data root itself"),
        ("faces", "/tmp/elsewhere/faces", "outside the data root"),
        ("faces", "data/../../x", "outside the data root"),
        ("faces", "data/judgments", "overlaps paths.judgments"),
        ("faces", "data/judgments/m", "overlaps paths.judgments"),
        ("variations", "data/.render-cache", "overlaps render cache"),
        ("scores", "data/faces/scores", "overlaps paths.faces"),
        ("faces", "data/import", "overlaps input data/import"),
        ("variations", "data/import/release", "overlaps input data/import"),
        ("faces", "data/analysis", "overlaps paths.analysis_cache"),
        ("judgments", "data/tracking", "overlaps tracking output"),
        ("analysis_cache", "/tmp/elsewhere/analysis", "outside the data root"),
        ("analysis_cache", "data/scores/cache", "overlaps paths.scores"),
        ("analysis_cache", "data/import/x", "overlaps input data/import"),
        ("reports", "/tmp/elsewhere/reports", "outside the reports root"),
        ("reports", "data", "outside the reports root"),
        ("reports", "..", "outside the reports root"),
        ("reports", "data/faces", "overlaps paths.faces"),
        ("reports", "data/import", "overlaps input data/import"),
    ],
)
def test_bad_output_paths_are_refused(tmp_path: Path, key: str, value: str, message: str) -> None:
    with pytest.raises(StylisticBiasError, match=message):
        stage_output(_params(**{key: value}), key, tmp_path)


@pytest.mark.parametrize("value", [".", "..", "/", "/tmp", "src", "conf/x", str(Path.home())])
def test_bad_data_roots_are_refused(tmp_path: Path, value: str) -> None:
    root = tmp_path / "project"
    root.mkdir()
    with pytest.raises(StylisticBiasError, match=r"paths\.data"):
        data_root(root, value)


def test_good_paths_resolve_inside_the_data_root(tmp_path: Path) -> None:
    check_all_outputs(_params(), tmp_path)
    assert stage_output(_params(), "faces", tmp_path) == (tmp_path / "data/faces").resolve()
    scratch = tmp_path / "scratch" / "sb"
    p = _params(data=str(scratch), faces=str(scratch / "faces"))
    assert stage_output(p, "faces", tmp_path / "project") == scratch / "faces"
    # reports in the project's reports/ (or below it) or inside the data root (a sweep job's)
    for good in ("reports/stylisticbias", "reports/run1", "data/run1/reports"):
        check_all_outputs(_params(reports=good), tmp_path)
    job = tmp_path / "sweep" / "job"
    check_all_outputs(
        {"paths": {k: str(job / v) for k, v in _params()["paths"].items()}}, tmp_path / "project"
    )


def test_safe_member_refuses_paths_that_leave_the_base(tmp_path: Path) -> None:
    base = tmp_path / "faces"
    (base / "images").mkdir(parents=True)
    (tmp_path / "outside.png").write_bytes(b"x")
    os.symlink(tmp_path / "outside.png", base / "images" / "link.png")
    assert safe_member(base, "images/a.png", "row 0") == (base / "images/a.png").resolve()
    for bad in ("/etc/passwd", "../outside.png", "images/../../outside.png", "images/link.png", ""):
        with pytest.raises(StylisticBiasError, match="row 0"):
            safe_member(base, bad, "row 0")


def test_atomic_dir_keeps_the_previous_output_on_failure(tmp_path: Path) -> None:
    final = tmp_path / "out"
    with atomic_dir(final) as tmp:
        (tmp / "a.txt").write_text("one")
    with pytest.raises(RuntimeError), atomic_dir(final) as tmp:
        (tmp / "a.txt").write_text("two")
        raise RuntimeError("boom")
    assert (final / "a.txt").read_text() == "one"
    assert (tmp_path / ".out.tmp").exists()  # left for the next run, which removes it
    with atomic_dir(final) as tmp:
        (tmp / "b.txt").write_text("three")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in final.iterdir()) == ["b.txt"]


def test_recover_dir_after_a_kill_between_the_two_renames(tmp_path: Path) -> None:
    final = tmp_path / "out"
    old = tmp_path / ".out.old"
    old.mkdir()
    (old / "a.txt").write_text("previous")
    (tmp_path / ".out.tmp").mkdir()
    recover_dir(final)
    assert (final / "a.txt").read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_atomic_write_never_leaves_a_half_file(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    atomic_write_bytes(p, b"1")
    atomic_write_bytes(p, b"22")
    assert p.read_bytes() == b"22" and sorted(q.name for q in tmp_path.iterdir()) == ["x.json"]


def test_atomic_path_replaces_only_when_the_block_succeeds(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(p) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert p.read_text() == "old"  # the temp file is left for remove_temp_files
    with atomic_path(p) as tmp:
        tmp.write_text("new")
    assert p.read_text() == "new" and sorted(q.name for q in tmp_path.iterdir()) == ["t.csv"]


def test_atomic_link_and_non_durable_write(tmp_path: Path) -> None:
    src = tmp_path / "src.png"
    atomic_write_bytes(src, b"png", durable=False)
    dest = tmp_path / "out" / "a.png"
    atomic_link(src, dest)
    atomic_link(src, dest)  # replacing is fine
    assert dest.read_bytes() == b"png"
    assert sorted(q.name for q in dest.parent.iterdir()) == ["a.png"]


def test_no_other_module_writes_its_own_temp_files() -> None:
    """One implementation of atomic writes: nobody else builds ``.<name>.tmp`` names."""
    import re

    pat = re.compile(r"with_name\(f?[\"']\.")
    src = ROOT / "src"
    offenders = [
        str(p.relative_to(src))
        for p in sorted(src.rglob("*.py"))
        if p.name != "outputs.py" and pat.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_second_process_on_one_output_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "data" / "faces"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from stylisticbias.outputs import "
            "OutputLock\nwith OutputLock(Path(sys.argv[1]), Path(sys.argv[2])):\n"
            "    print('locked', flush=True); time.sleep(60)",
            str(tmp_path),
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        with pytest.raises(StylisticBiasError, match="another process"), OutputLock(tmp_path, out):
            pass
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    with OutputLock(tmp_path, out):  # a killed holder never leaves a stale lock
        pass


# --------------------------------------------------------------------------- stages
@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch project: the real conf/ and pipelines/, a data/ full of finished work."""
    root = tmp_path_factory.mktemp("project")
    for name in ("conf", "pipelines"):
        os.symlink(ROOT / name, root / name)
    for rel in (
        "data/faces/faces.parquet",
        "data/variations/variations.parquet",
        "data/judgments/m/judgments.parquet",
        "data/.render-cache/ab/abc.png",
        "data/scores/model=m/part-0.parquet",
        "data/import/README.md",
        "data/import/mine/user-file.txt",
        "data/analysis/m/summary.json",
        "data/tracking/report_runs.json",
        "reports/README.md",
        "reports/figures/fig.png",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(rel.encode())
    return root


def _run_stage(project: Path, stage: str, params: dict, *args: str) -> subprocess.CompletedProcess:
    (project / "params.yaml").write_text(dump_params(params), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(ROOT / "pipelines" / f"{stage}.py"), *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _bad_params(kind: str, outside: Path, composed: dict) -> tuple[str, dict, tuple[str, ...]]:
    params = copy.deepcopy(composed)
    if kind == "faces=data":
        params["paths"]["faces"] = "data"
        return "faces", params, ()
    if kind == "faces=outside":
        params["paths"]["faces"] = str(outside)
        return "faces", params, ()
    if kind == "variations=data":
        params["paths"]["variations"] = "data"
        return "variations", params, ()
    if kind.startswith("paths."):  # paths.<key>=<value>@<stage>
        setting, stage = kind.rsplit("@", 1)
        key, value = setting.split("=", 1)
        params["paths"][key.split(".", 1)[1]] = str(outside) if value == "outside" else value
        return stage, params, ("simulated-strong",) if stage in ("judge", "scores") else ()
    if kind.startswith("faces.n="):
        params["faces"]["n"] = yaml.safe_load(kind.split("=", 1)[1])
        return "faces", params, ()
    if kind == "seeds=[1,1]":
        params["judge"]["seeds"] = [1, 1]
        return "judge", params, ("simulated-strong",)
    if kind == "temperature=-1":
        params["judge"]["temperature"] = -1
        return "judge", params, ("simulated-strong",)
    if kind == "seeds=[]":
        params["judge"]["seeds"] = []
        return "judge", params, ("simulated-strong",)
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind",
    [
        "faces=data",
        "faces=outside",
        "variations=data",
        "faces.n=0",
        "faces.n=-5",
        "faces.n=abc",
        "seeds=[1,1]",
        "seeds=[]",
        "temperature=-1",
        "paths.faces=data/import@faces",
        "paths.faces=data/stylisticbias/analysis@faces",
        "paths.variations=data/tracking@variations",
        "paths.analysis_cache=outside@analyze",
        "paths.reports=outside@report",
        "paths.reports=outside@faces",
        "paths.scores=data/import@judge",
    ],
)
def test_bad_value_fails_in_one_line_and_touches_nothing(
    project: Path, tmp_path: Path, kind: str, default_params: dict
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    before, before_out, before_rep = (
        tree(project / "data"),
        tree(outside),
        tree(project / "reports"),
    )
    stage, params, args = _bad_params(kind, outside, default_params)
    proc = _run_stage(project, stage, params, *args)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR"), proc.stderr
    if kind.startswith("paths."):  # refused for the path, before the stage reads its inputs
        assert kind.split("=", 1)[0] in lines[0], lines[0]
    assert tree(project / "data") == before
    assert tree(outside) == before_out
    assert tree(project / "reports") == before_rep


def test_a_second_process_running_the_same_stage_is_refused(
    project: Path, default_params: dict
) -> None:
    """Every stage script holds a lock named after itself and its arguments."""
    from stylisticbias.cli import stage_lock_name

    name = stage_lock_name([str(ROOT / "pipelines/scores.py"), "simulated-weak"])
    assert name == "scores-simulated-weak"
    params = copy.deepcopy(default_params)
    with OutputLock(project, Path(f"stage-{name}")):
        proc = _run_stage(project, "scores", params, "simulated-weak")
    assert proc.returncode == 2 and "another process" in proc.stderr, proc.stderr
    assert len([ln for ln in proc.stderr.splitlines() if ln.strip()]) == 1


#: a process holding an output lock forks a worker; the worker tells the parent (through a
#: pipe) once it runs -- after the at-fork hook that closes its copy of the lock -- and only
#: then does the parent print the worker's pid: a handshake, not a sleep, so the test never
#: kills the parent while the worker still holds a copy of the lock
_FORKING_HOLDER = """
import os, sys, time
from pathlib import Path
from stylisticbias.outputs import OutputLock
with OutputLock(Path(sys.argv[1]), Path(sys.argv[2])):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r); os.write(w, b"1"); os.close(w)
        time.sleep(60); os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"1"
    print(pid, flush=True)
    time.sleep(60)
"""


def _lock_dies_with_its_process(tmp_path: Path) -> None:
    out = tmp_path / "data" / "variations"
    parent = subprocess.Popen(
        [sys.executable, "-c", _FORKING_HOLDER, str(tmp_path), str(out)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    try:
        with pytest.raises(StylisticBiasError, match="another process"), OutputLock(tmp_path, out):
            pass
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        os.kill(worker, 0)  # the forked worker is still alive ...
        with OutputLock(tmp_path, out):  # ... and does not hold the lock
            pass
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGKILL)
        parent.stdout.close()


def test_lock_dies_with_its_process_even_if_a_forked_worker_lives_on(tmp_path: Path) -> None:
    _lock_dies_with_its_process(tmp_path)


@pytest.mark.slow
def test_lock_tests_pass_200_runs_in_a_row_under_parallel_load(tmp_path: Path) -> None:
    """The stress check: both lock scenarios 200 times each while every core is kept busy
    (processes competing for the CPU are what made the forked worker late)."""
    burn = "import time\nstop = time.monotonic() + 1800\nwhile time.monotonic() < stop: pass"
    burners = [
        subprocess.Popen([sys.executable, "-c", burn]) for _ in range(2 * (os.cpu_count() or 2))
    ]
    try:
        for i in range(200):
            _lock_dies_with_its_process(tmp_path / f"fork{i}")
            test_second_process_on_one_output_is_refused(tmp_path / f"second{i}")
    finally:
        for b in burners:
            b.kill()
            b.wait()


def test_every_path_is_checked_by_the_first_stage() -> None:
    """`dvc exp run -S paths.<key>=<bad>` must stop in one line (exit 2) instead of running
    nothing and exiting 0: the check stage runs on every `dvc repro` (``always_changed``) and
    checks every ``paths`` key (validate_params -> check_all_outputs), and every stage reads
    them (each group's file in data/config/ holds the ``paths`` section)."""
    from stylisticbias.stage_inputs import GROUPS

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert stages["check"]["always_changed"] is True
    assert all("paths" in g.settings for g in GROUPS)
