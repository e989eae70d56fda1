"""``release --out`` obeys the one rule for writable paths: it replaces only a
folder it made (its marker inside) or an empty one; a folder of someone else's files, the API
response cache, a tracked file, ``.venv``, ``mlruns``, a home or system directory are refused in
one line, and no file changes inside or outside the project."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from release_project import DATASET_TESTS, project_params

import stylisticbias.release.build as build_module
from stylisticbias.config import dump_params
from stylisticbias.errors import StylisticBiasError
from stylisticbias.release.build import MARKER, build_release
from stylisticbias.spec.parse import config_from_params

#: files of the project git tracks (README.md, dvc.yaml), and a tool's own untracked data
TRACKED = ("README.md", "dvc.yaml")
UNTRACKED = (".venv/pyvenv.cfg", ".cache/api-responses.sqlite", "mlruns/0/meta.yaml")


def tree(path: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``path`` (not ``.git/`` or ``.locks/``)."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not {".git", ".locks"} & set(p.relative_to(path).parts)
    }


@pytest.fixture
def git_project(
    built_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Path]:
    """(project, a folder outside it holding someone's files, a fake $HOME), the project a git
    checkout of the built release project; the working directory."""
    root = tmp_path / "project"
    shutil.copytree(built_project, root, symlinks=True)
    for rel in (*TRACKED, *UNTRACKED):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", *TRACKED], check=True)
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "precious.txt").write_text("keep me")
    (outside / "sub" / "notes.md").write_text("mine")
    home = tmp_path / "home" / "me"
    home.mkdir(parents=True)
    (home / "thesis.tex").write_text("years of work")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(DATASET_TESTS))
    return root, outside, home


def _never_written(final: Path) -> None:
    raise AssertionError(f"release would replace {final}")


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("OUTSIDE", "non-empty folder this command did not create"),
        (".cache", r"\.cache/ folder"),
        ("README.md", "is a file"),
        ("dvc.yaml", "is a file"),
        (".venv", r"\.venv/ folder"),
        ("mlruns", "mlruns/ folder"),
        ("HOME", "home directory"),
        ("/etc", "top-level directory|system directory"),
        ("/usr/share", "system directory"),
    ],
)
def test_release_out_is_refused_in_one_line_and_nothing_changes(
    git_project: tuple[Path, Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    out: str,
    message: str,
) -> None:
    root, outside, home = git_project
    if out.startswith("/"):  # never let a regression reach a system folder
        monkeypatch.setattr(build_module, "atomic_dir", _never_written)
    raw = out.replace("OUTSIDE", str(outside)).replace("HOME", str(home))
    before = (tree(root), tree(outside), tree(home))
    with pytest.raises(StylisticBiasError, match=message) as exc:
        build_release(config_from_params(project_params(out=raw)))
    assert "\n" not in str(exc.value) and str(exc.value).startswith(f"release.out={raw!r}")
    assert (tree(root), tree(outside), tree(home)) == before
    assert not (root.parent / f".{Path(raw).name}.tmp").exists()


def test_release_replaces_only_a_folder_it_made(git_project: tuple[Path, Path, Path]) -> None:
    _, outside, _ = git_project
    empty = outside.parent / "empty"
    empty.mkdir()
    first = build_release(config_from_params(project_params(out=str(empty)))).out
    assert (first / MARKER).is_file()  # an empty folder may be filled, and is marked
    again = build_release(config_from_params(project_params(out=str(empty)))).out
    assert tree(again) == tree(first)  # its own folder is replaced (byte-identical)
    (first / MARKER).unlink()
    with pytest.raises(StylisticBiasError, match="did not create"):
        build_release(config_from_params(project_params(out=str(empty))))


def test_release_cli_out_a_tracked_file_is_one_line(git_project: tuple[Path, Path, Path]) -> None:
    """``python -m stylisticbias.release --out README.md``: exit 2, one line, README.md kept."""
    root = git_project[0]
    (root / "params.yaml").write_text(dump_params(project_params()), encoding="utf-8")
    before = tree(root)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(DATASET_TESTS), *sys.path])}
    proc = subprocess.run(
        [sys.executable, "-m", "stylisticbias.release", "--out", "README.md"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "release.out='README.md'" in lines[0], proc.stderr
    assert tree(root) == before
    assert (root / "README.md").read_text() == "README.md"
