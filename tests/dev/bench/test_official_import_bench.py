"""The official-import benchmark runs end to end on a small tree and reports what it measured."""

from __future__ import annotations

import json
from pathlib import Path

from stylisticbias_dev.bench import official_import


def test_bench_writes_its_result(tmp_path: Path) -> None:
    out = tmp_path / "official_import.json"
    rc = official_import.main(
        ["--files", "300,600", "--workdir", str(tmp_path / "w"), "--out", str(out)]
    )
    assert rc == 0
    doc = json.loads(out.read_text())
    assert set(doc["runs"]) == {"300", "600"}
    for n, r in doc["runs"].items():
        assert r["files"] == r["rows"] == int(n) and r["bad"] == 0
        assert r["files_per_s"] > 0 and r["peak_rss_mb"] > 0
    assert isinstance(doc["meets_speed"], bool) and doc["machine"]["cores"] >= 1
