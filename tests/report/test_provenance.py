"""Provenance: the git state a report records."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from stylisticbias.report.provenance import git_commit


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.org")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("x = 1\n")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "README.md").write_text("old\n")
    (tmp_path / "dvc.lock").write_text("stages: {}\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "init")
    return tmp_path


def test_clean_checkout(repo: Path) -> None:
    sha, dirty = git_commit(repo)
    assert sha == _git(repo, "rev-parse", "HEAD")
    assert dirty is False


def test_pipeline_outputs_do_not_make_it_dirty(repo: Path) -> None:
    (repo / "dvc.lock").write_text("stages: {a: 1}\n")
    (repo / "reports" / "README.md").write_text("new\n")
    assert git_commit(repo)[1] is False


def test_source_change_makes_it_dirty(repo: Path) -> None:
    (repo / "src" / "m.py").write_text("x = 2\n")
    assert git_commit(repo)[1] is True


def test_outside_git(tmp_path: Path) -> None:
    assert git_commit(tmp_path) == (None, False)
