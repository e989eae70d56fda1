"""The template MLflow stores of the tests: the same database MLflow itself creates, usable."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import mlflow.store.db.utils as db_utils
import sqlalchemy
from mlflow.tracking import MlflowClient

from stylisticbias_dev.mlflow_db import TemplateStore, template_stores


def _schema(path: Path) -> tuple[list[tuple[str, tuple[str, ...]]], list[tuple[str]]]:
    """Every table and index with its definition's lines, sorted: MLflow's batch migrations
    re-create tables with their constraints in set order (it varies with PYTHONHASHSEED between
    two stores MLflow creates itself), so the order of the lines is not compared."""
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
        version = con.execute("SELECT version_num FROM alembic_version").fetchall()
    tables = [
        (name, tuple(sorted(line.strip().rstrip(",") for line in (sql or "").splitlines())))
        for name, sql in rows
    ]
    return tables, version


def test_a_template_copy_is_the_store_mlflow_creates(tmp_path: Path) -> None:
    # tests/conftest.py installs the template for the session: undo it for MLflow's own store
    original = db_utils._initialize_tables
    if isinstance(original, TemplateStore):
        original = original._initialize
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'mlflow-own.db'}")
    original(engine)
    engine.dispose()
    with template_stores(tmp_path) as store:
        client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'copied.db'}")
        exp = client.create_experiment("x")
        run = client.create_run(exp)
        client.log_metric(run.info.run_id, "m", 0.5)
        assert client.get_run(run.info.run_id).data.metrics == {"m": 0.5}
        assert store.template().exists()
    assert _schema(tmp_path / "copied.db") == _schema(tmp_path / "mlflow-own.db")
    assert _schema(tmp_path / "copied.db")[1]  # a migrated store (alembic head recorded)


def test_the_patch_is_undone_after_the_block(tmp_path: Path) -> None:
    before = db_utils._initialize_tables
    with template_stores(tmp_path):
        assert isinstance(db_utils._initialize_tables, TemplateStore)
    assert db_utils._initialize_tables is before
