"""A durable response cache: one SQLite row per request, written the moment its response arrives.

Key: sha256 of the canonical JSON of the request as sent (endpoint URL, served model, the full
message list with every image replaced by its sha256, seed, temperature, max_tokens, logprob
settings, extra body fields) -- see :func:`request_key`. Headers (and so API keys) are never part
of the key or of anything stored.

* A rerun finds every response here and sends no request.
* A killed run loses at most the requests in flight: each response is committed on arrival
  (WAL journal), so the resumed run asks only for the rest and ends with the same records.
  (``synchronous=NORMAL``: a killed *process* loses nothing committed; a power cut may lose the
  last few responses, which a rerun simply asks again.)
* One file can serve many experiments (the default lives outside ``data/``); ``prune`` drops
  entries by age, endpoint or model (``python -m stylisticbias.judge.openai_cli cache ...``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    endpoint TEXT NOT NULL,
    served_model TEXT NOT NULL,
    image_sha256 TEXT,
    kind TEXT NOT NULL,
    response TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    last_used REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_model ON responses (endpoint, served_model);
CREATE INDEX IF NOT EXISTS responses_used ON responses (last_used);
"""


def canonical(obj: Any) -> str:
    """Canonical JSON (sorted keys, no spaces): equal requests give equal strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(endpoint_url: str, body_for_key: Mapping[str, Any]) -> str:
    """The cache key of a request: sha256 of the endpoint URL and the keyed body."""
    return hashlib.sha256(f"{endpoint_url}\n{canonical(body_for_key)}".encode()).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    """Rows and token totals of a cache file."""

    rows: int
    prompt_tokens: int
    completion_tokens: int
    by_model: dict[str, int]


class ResponseCache:
    """SQLite-backed response cache (safe for several processes: WAL + busy timeout)."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        #: read-only view of a cache file that does not exist: empty, and nothing is created
        self._absent = read_only and not self.path.exists()
        if read_only:  # a dry run's view: never creates the directory or the file
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            if not self._absent:
                self._db = sqlite3.connect(uri, uri=True, timeout=60.0, isolation_level=None)
                self._checked(lambda: self._db.execute("SELECT count(*) FROM sqlite_master"))
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        self._checked(self._open)

    def _open(self) -> None:
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: a killed process loses nothing
        self._db.executescript(_SCHEMA)

    def _checked(self, step: Callable[[], object]) -> None:
        """Run the first statement(s) on the file: a file that is not an SQLite database (or not
        one SQLite can read) is one :class:`StylisticBiasError` line naming it, left as it is."""
        try:
            step()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StylisticBiasError(
                f"{self.path}: not a readable response cache ({exc}); it is left as it is: move "
                "it aside, or point the model's engine.cache at another file"
            ) from None

    def close(self) -> None:
        """Close the connection."""
        if not self._absent:
            self._db.close()

    def get(self, key: str, *, touch: bool = True) -> dict[str, Any] | None:
        """The stored response of ``key`` (and marks it used unless ``touch`` is false), or
        None."""
        row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        if touch:
            self._db.execute("UPDATE responses SET last_used = ? WHERE key = ?", (time.time(), key))
        return json.loads(row[0])

    def contains(self, key: str) -> bool:
        """Whether ``key`` is stored (does not touch ``last_used``)."""
        if self._absent:
            return False
        return (
            self._db.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None
        )

    def put(
        self,
        key: str,
        response: Mapping[str, Any],
        *,
        endpoint: str,
        served_model: str,
        image_sha256: str | None,
        kind: str,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        """Store one response durably (committed before this returns)."""
        now = time.time()
        self._db.execute(
            "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                endpoint,
                served_model,
                image_sha256,
                kind,
                canonical(response),
                int(prompt_tokens),
                int(completion_tokens),
                now,
                now,
            ),
        )

    def stats(self) -> CacheStats:
        """Row and token totals, rows per ``served_model @ endpoint``."""
        n, pt, ct = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)"
            " FROM responses"
        ).fetchone()
        by = {
            f"{m} @ {e}": c
            for e, m, c in self._db.execute(
                "SELECT endpoint, served_model, COUNT(*) FROM responses GROUP BY endpoint, "
                "served_model ORDER BY endpoint, served_model"
            )
        }
        return CacheStats(int(n), int(pt), int(ct), by)

    def prune(
        self,
        *,
        older_than_days: float | None = None,
        endpoint: str | None = None,
        served_model: str | None = None,
        vacuum: bool = True,
    ) -> int:
        """Delete entries (unused for ``older_than_days``, and/or of one endpoint/model).

        With no criterion nothing is deleted. Returns the number of rows removed.
        """
        where, args = [], []
        if older_than_days is not None:
            where.append("last_used < ?")
            args.append(time.time() - float(older_than_days) * 86400.0)
        if endpoint is not None:
            where.append("endpoint = ?")
            args.append(endpoint)
        if served_model is not None:
            where.append("served_model = ?")
            args.append(served_model)
        if not where:
            return 0
        cur = self._db.execute(f"DELETE FROM responses WHERE {' AND '.join(where)}", args)
        n = cur.rowcount
        if vacuum and n:
            self._db.execute("VACUUM")
        log.info("pruned %d cached response(s) from %s", n, self.path)
        return int(n)
