"""The task family's tests: ``task_project`` (a composed task-protocol project) is the judge
tests' helper (tests/judge/task_project.py, shared with the engines' task tests)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "judge"))  # task_project
