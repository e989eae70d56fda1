"""New MLflow SQLite stores from a template: the schema is migrated once, then copied (tests).

MLflow creates the schema of a new tracking store by running every one of its alembic
migrations: seconds per store on the 2-core dev machine, paid by each test that tracks to a
fresh ``sqlite:///<tmp>/mlflow.db`` (tens of them). :func:`install` replaces MLflow's table
initialisation, in this process, by a page copy (SQLite's backup API) of one empty store that
MLflow itself created and migrated on first use: the same MLflow version and the same
migrations give the same database, in milliseconds. Stores on other databases and stores that
already have their tables are left to MLflow as before; subprocesses are unaffected.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: the module attributes MLflow looks ``_initialize_tables`` up through
_TARGETS = ("mlflow.store.db.utils", "mlflow.store.model_registry.sqlalchemy_store")


class TemplateStore:
    """Initialises new SQLite stores by copying one migrated empty store built in ``folder``."""

    def __init__(self, folder: Path, initialize: Callable[[Any], None]) -> None:
        self.folder = folder
        self._initialize = initialize  # MLflow's own (create + migrate)
        self._lock = threading.Lock()
        self._template: Path | None = None

    def template(self) -> Path:
        """The migrated empty store, built by MLflow on first use."""
        with self._lock:
            if self._template is None:
                import sqlalchemy

                path = self.folder / "mlflow-template.db"
                path.unlink(missing_ok=True)
                engine = sqlalchemy.create_engine(f"sqlite:///{path}")
                try:
                    self._initialize(engine)
                finally:
                    engine.dispose()
                self._template = path
        return self._template

    def __call__(self, engine: Any) -> None:
        """MLflow's ``_initialize_tables(engine)``: a copy of the template for a SQLite file."""
        url = engine.url
        if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
            self._initialize(engine)
            return
        source = sqlite3.connect(self.template())
        raw = engine.raw_connection()
        try:
            source.backup(raw.driver_connection)
        finally:
            raw.close()
            source.close()


@contextmanager
def template_stores(folder: Path) -> Iterator[TemplateStore]:
    """Within the block, new MLflow SQLite stores in this process are copies of one migrated
    empty store kept in ``folder``."""
    import importlib

    import mlflow.store.db.utils as db_utils

    store = TemplateStore(folder, db_utils._initialize_tables)
    patched = []
    for name in _TARGETS:
        module = importlib.import_module(name)
        patched.append((module, module._initialize_tables))
        module._initialize_tables = store
    try:
        yield store
    finally:
        for module, original in patched:
            module._initialize_tables = original
