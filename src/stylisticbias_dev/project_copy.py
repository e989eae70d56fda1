"""A fresh git repository holding the working tree's sources (for tests that run DVC on a copy).

Tracked and unignored files are copied, except generated data, reports and ``dvc.lock``, and
committed once, so ``dvc repro`` and ``dvc exp run`` start from a clean clone's state.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def tool_env() -> dict[str, str]:
    """The environment with this interpreter's ``bin`` first on ``PATH`` (its ``dvc``, ``git``)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def copy_project(root: Path, dest: Path) -> Path:
    """Copy ``root``'s sources into ``dest`` (a git repository with one commit) and return it."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    for rel in files:
        generated = rel.startswith(("reports/", "data/")) and rel != "data/import/README.md"
        if (root / rel).is_file() and not generated and rel != "dvc.lock":
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, dest / rel)
    env = tool_env()
    for cmd in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"],
    ):
        subprocess.run(cmd, cwd=dest, check=True, env=env, capture_output=True)
    return dest
