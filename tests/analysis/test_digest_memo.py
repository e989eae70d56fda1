"""An unchanged input is not hashed again; a rewritten one is."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from stylisticbias.analysis import digest_memo
from stylisticbias.analysis.digest_memo import MEMO_FILE, DigestMemo


def test_digest_reused_while_the_file_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    f = tmp_path / "judgments.parquet"
    f.write_bytes(b"abc")
    calls: list[Path] = []
    real = digest_memo.file_digest

    def counting(path: Path) -> str:
        calls.append(Path(path))
        return real(path)

    monkeypatch.setattr(digest_memo, "file_digest", counting)
    first = DigestMemo(cache)
    assert first.digest(f) == hashlib.sha256(b"abc").hexdigest()
    first.save()
    assert (cache / MEMO_FILE).exists() and len(calls) == 1
    again = DigestMemo(cache)
    assert again.digest(f) == hashlib.sha256(b"abc").hexdigest()
    assert len(calls) == 1  # from the memo
    again.save()
    f.write_bytes(b"abd")  # same size, rewritten: a new mtime
    st = os.stat(f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    third = DigestMemo(cache)
    assert third.digest(f) == hashlib.sha256(b"abd").hexdigest() and len(calls) == 2


def test_no_cache_directory_remembers_nothing(tmp_path: Path) -> None:
    f = tmp_path / "x"
    f.write_bytes(b"1")
    memo = DigestMemo(None)
    assert memo.digest(f) == hashlib.sha256(b"1").hexdigest()
    memo.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]


def test_unreadable_memo_hashes_again(tmp_path: Path) -> None:
    (tmp_path / MEMO_FILE).write_text("{not json")
    f = tmp_path / "y"
    f.write_bytes(b"2")
    assert DigestMemo(tmp_path).digest(f) == hashlib.sha256(b"2").hexdigest()


def test_dvc_leaves_the_memo_out_of_the_analysis_output() -> None:
    """The memo holds absolute paths, inodes and mtimes: inside the analysis cache (a DVC output)
    it would make the output's hash, and so dvc.lock, differ on every clone."""
    from dvc.repo import Repo

    root = Path(__file__).resolve().parents[2]
    ignore = Repo(str(root)).dvcignore
    assert ignore.is_ignored_file(str(root / "data" / "analysis" / MEMO_FILE))
    assert not ignore.is_ignored_file(str(root / "data" / "analysis" / "summary.json"))
