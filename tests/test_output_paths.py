"""One rule for every writable path: no output inside the ``check`` stage's
``data/config`` (DVC deletes it), in a folder holding git-tracked files (``reports/bench``), in
``.venv``, ``.cache``, ``mlruns``, ``multirun``, a home or system directory, or a file; refused
in one line by ``configure compose`` and by every stage (``cli.stage``), writing nothing."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stylisticbias.config import PARAMS_ENV, compose, dump_params
from stylisticbias.errors import StylisticBiasError
from stylisticbias.output_paths import OUTPUT_KEYS, check_all_outputs, data_root

ROOT = Path(__file__).resolve().parents[1]

#: files of the scratch project that git tracks (the committed report, the benchmarks, ...)
TRACKED = (
    "README.md",
    "dvc.yaml",
    "data/import/README.md",
    "data/notes/notes.md",
    "reports/stylisticbias/README.md",
    "reports/stylisticbias/calibration.json",
    "reports/stylisticbias/tables/t.csv",
    "reports/stylisticbias/figures/f.png",
    "reports/bench/README.md",
    "reports/bench/calibration.json",
    "reports/notes/notes.md",
)
#: files that are there but not tracked (a tool's own data)
UNTRACKED = (".venv/pyvenv.cfg", ".cache/api-responses.sqlite", "mlruns/0/meta.yaml")


def tree(path: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``path`` (hidden ones included; not
    git's own ``.git/`` or the stage locks' ``.locks/``)."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not {".git", ".locks"} & set(p.relative_to(path).parts)
    }


def _git_project(root: Path) -> Path:
    """A git checkout holding :data:`TRACKED` (added to the index) and :data:`UNTRACKED`."""
    root.mkdir(parents=True, exist_ok=True)
    for rel in (*TRACKED, *UNTRACKED):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", *TRACKED], check=True)
    return root


@pytest.fixture
def git_project(tmp_path: Path) -> Path:
    return _git_project(tmp_path / "project")


def _params(**paths: str) -> dict:
    base = {
        "data": "data",
        "faces": "data/faces",
        "variations": "data/variations",
        "judgments": "data/judgments",
        "scores": "data/scores",
        "analysis_cache": "data/analysis",
        "reports": "reports/stylisticbias",
        "qa": "data/qa",
        "annotations": "data/annotations",
        "soda": "data/soda",
    }
    return {"protocol": "stylisticbias", "paths": {**base, **paths}}


# --------------------------------------------------------------------------- case 1
@pytest.mark.parametrize("key", OUTPUT_KEYS)
def test_no_output_inside_the_check_stages_data_config(git_project: Path, key: str) -> None:
    """``data/config`` is the check stage's non-persistent output: DVC deletes it (and anything
    written inside it) before the stage runs."""
    with pytest.raises(StylisticBiasError, match=rf"^paths\.{key}='data/config/{key}': "):
        check_all_outputs(_params(**{key: f"data/config/{key}"}), git_project)
    if key != "reports":  # reports outside the reports root: refused for that reason
        with pytest.raises(StylisticBiasError, match="overlaps check output='data/config'"):
            check_all_outputs(_params(**{key: f"data/config/{key}"}), git_project)


# --------------------------------------------------------------------------- case 2
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("reports/bench", "holds reports/bench/README.md, a file tracked by git"),
        ("reports/notes", "holds reports/notes/notes.md, a file tracked by git"),
        ("reports/stylisticbias/tables", "overlaps report output reports/stylisticbias/tables"),
        (
            "reports/stylisticbias/figures/mine",
            "overlaps report output reports/stylisticbias/figures",
        ),
        # every protocol's report and the audit sit inside it
        ("reports", "overlaps audit output='reports/audit'"),
        ("reports/bench/README.md", "overlaps|is a file|tracked by git"),
    ],
)
def test_reports_may_not_hold_tracked_files_it_does_not_own(
    git_project: Path, value: str, message: str
) -> None:
    with pytest.raises(StylisticBiasError, match=message) as exc:
        check_all_outputs(_params(reports=value), git_project)
    assert "\n" not in str(exc.value) and str(exc.value).startswith(f"paths.reports='{value}'")


def test_the_committed_report_and_new_folders_are_accepted(git_project: Path) -> None:
    """``paths.reports=reports/<protocol>`` (the default): its tracked files are the report
    stages' own outputs (README.md, calibration.json, tables/, figures/, ...) and the stages
    never write ``reports/bench``; a new folder holds nothing tracked."""
    for good in ("reports/stylisticbias", "reports/new", "data/run1/reports"):
        check_all_outputs(_params(reports=good), git_project)


@pytest.mark.parametrize("key", ["faces", "qa", "analysis_cache"])
def test_a_data_output_holding_tracked_files_is_refused(git_project: Path, key: str) -> None:
    with pytest.raises(StylisticBiasError, match=r"holds data/notes/notes\.md, a file tracked"):
        check_all_outputs(_params(**{key: "data/notes"}), git_project)


# --------------------------------------------------------------------------- places
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (".venv", r"\.venv/ folder"),
        (".venv/data", r"\.venv/ folder"),
        (".cache", r"\.cache/ folder"),
        ("mlruns/data", "mlruns/ folder"),
        ("multirun", "sweeps' folder"),
        ("README.md", "is a file"),
        ("dvc.yaml/data", "is a file"),
        ("/etc/stylisticbias", "system directory"),
        ("/usr/share/stylisticbias", "system directory"),
        ("HOME", "home directory"),
        ("HOME/.cache/sb", r"\.cache folder|hidden folder"),
        ("HOME/.config/sb", "hidden folder of the home"),
        ("OUTSIDE/.venv/data", r"inside a \.venv folder"),
        ("OUTSIDE/mlruns", "inside a mlruns folder"),
    ],
)
def test_bad_data_roots_are_refused(
    git_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    home = tmp_path / "home" / "me"
    (home / ".cache").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    raw = value.replace("HOME", str(home)).replace("OUTSIDE", str(tmp_path / "outside"))
    with pytest.raises(StylisticBiasError, match=message) as exc:
        data_root(git_project, raw)
    assert "\n" not in str(exc.value) and str(exc.value).startswith("paths.data=")


def test_a_sweep_jobs_data_root_inside_multirun_is_accepted(git_project: Path) -> None:
    job = "multirun/2026-01-01/10-00-00/0/data"
    assert data_root(git_project, job) == git_project.resolve() / job


# --------------------------------------------------------------------------- end to end
def _scratch(tmp_path: Path) -> Path:
    """A git project with the real conf/ (copied: a failing check must not write conf/dvc)."""
    root = _git_project(tmp_path / "project")
    shutil.copytree(ROOT / "conf", root / "conf")
    os.symlink(ROOT / "pipelines", root / "pipelines")
    return root


def _one_line_exit_2(proc: subprocess.CompletedProcess, key: str) -> None:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and key in lines[0], proc.stderr


@pytest.mark.parametrize(
    "override", ["paths.judgments=data/config/judgments", "paths.reports=reports/bench"]
)
def test_configure_compose_refuses_in_one_line_and_writes_nothing(
    tmp_path: Path, override: str
) -> None:
    root = _scratch(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    before, before_out = tree(root), tree(outside)
    proc = subprocess.run(
        [sys.executable, "-m", "stylisticbias.configure", "compose", override],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    _one_line_exit_2(proc, override.split("=", 1)[0])
    assert tree(root) == before and tree(outside) == before_out


def test_every_stage_refuses_an_output_inside_data_config(
    tmp_path: Path, default_params: dict
) -> None:
    """The check stage (and any stage: ``cli.stage`` checks every path first) on a params file
    with ``paths.judgments=data/config/judgments``: one line, exit 2, nothing written."""
    root = _scratch(tmp_path)
    params = {**default_params, "paths": {**default_params["paths"]}}
    params["paths"]["judgments"] = "data/config/judgments"
    params_file = tmp_path / "job-params.yaml"
    params_file.write_text(dump_params(params), encoding="utf-8")
    before = tree(root)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "pipelines" / "check.py")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, PARAMS_ENV: str(params_file)},
    )
    _one_line_exit_2(proc, "paths.judgments")
    assert "data/config" in proc.stderr
    after = tree(root)
    assert after == before


def test_compose_of_the_defaults_still_passes() -> None:
    check_all_outputs(compose(), ROOT)
