"""Test helper: read a SQLite MLflow store directly (live runs' tags, a run's metrics and
artifact files)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def run_tags(db: Path) -> dict[str, dict[str, str]]:
    """``{run id: its tags}`` of the store's live (not deleted) runs."""
    with sqlite3.connect(db) as con:
        live = [
            r for (r,) in con.execute("SELECT run_uuid FROM runs WHERE lifecycle_stage = 'active'")
        ]
        return {
            r: dict(con.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (r,)))
            for r in live
        }


def run_metrics(db: Path, run: str) -> dict[str, float]:
    """The latest value of every metric of ``run``."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT key, value FROM latest_metrics WHERE run_uuid = ?", (run,))
        return dict(rows.fetchall())


def run_artifacts(db: Path, run: str) -> set[str]:
    """The artifact files of ``run`` (paths relative to its artifact root), the store's
    ``mlruns/`` beside ``db``."""
    root = next(db.parent.glob(f"mlruns/*/{run}/artifacts"))
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
