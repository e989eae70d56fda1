"""Fixtures of the openai-engine tests: the tiny checkpoint and the judge tables helper."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # judge_tables (tests/judge)
sys.path.insert(0, str(Path(__file__).resolve().parent))  # servers
