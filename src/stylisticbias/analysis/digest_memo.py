"""File digests remembered by the file's identity, so that an unchanged input is not re-hashed.

The streaming analysis keys each model's cached summary by the SHA-256 of its score file and
judgments file (:mod:`stylisticbias.analysis.streaming`); at paper scale a judgments file is
~47 MB, so a 100-model leaderboard re-hashes ~4.7 GB on every run, before it can see that all
but one model are unchanged. Like DVC's own state database, a digest is reused while the file's
``(size, mtime_ns, inode)`` are those it was computed for; anything else (a rewritten file gets a
new inode or mtime) hashes the file again. The memo is one JSON file beside the summaries
(``<analysis_cache>/.digests.json``); without a cache directory nothing is remembered.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from stylisticbias.outputs import atomic_write_text
from stylisticbias.score_store import file_digest

log = logging.getLogger(__name__)

MEMO_FILE = ".digests.json"


class DigestMemo:
    """``digest(path)``: the file's SHA-256, from the memo when its identity is unchanged;
    ``save()`` writes the memo (the files seen in this run only)."""

    def __init__(self, cache: Path | None) -> None:
        self.path = cache / MEMO_FILE if cache is not None else None
        self._old: dict[str, dict[str, object]] = {}
        self._new: dict[str, dict[str, object]] = {}
        if self.path is not None and self.path.exists():
            try:
                self._old = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                log.warning("%s: unreadable; every input is hashed again", self.path)

    def digest(self, path: Path) -> str:
        """SHA-256 hex digest of ``path``'s bytes."""
        st = os.stat(path)
        ident = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}
        key = str(Path(path).resolve())
        got = self._old.get(key)
        if isinstance(got, dict) and {k: got.get(k) for k in ident} == ident and got.get("sha256"):
            sha = str(got["sha256"])
        else:
            sha = file_digest(path)
        self._new[key] = {**ident, "sha256": sha}
        return sha

    def save(self) -> None:
        """Write the memo (no-op without a cache directory)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(self._new, indent=0, sort_keys=True) + "\n")
