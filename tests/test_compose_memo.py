"""The tests' memoised composition (tests/compose_memo.py) is ``compose`` itself: equal result,
a private copy per call, and a fresh composition once conf/ changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from compose_memo import composed, model_section

from stylisticbias.config import ROOT, compose, load_group_option


def test_composed_is_compose_and_each_call_gets_its_own_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(ROOT / "conf", tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    first = composed(["faces.n=7"])
    assert first == compose(["faces.n=7"])
    first["faces"]["n"] = 99  # a test edits what it gets
    assert composed(["faces.n=7"])["faces"]["n"] == 7
    assert model_section("simulated-weak") == load_group_option("model", "simulated-weak")
    # an edited conf/ is composed anew
    assert composed()["faces"]["n"] == 100
    demo = tmp_path / "conf" / "experiment" / "demo.yaml"
    demo.write_text(demo.read_text().replace("  n: 100\n", "  n: 321\n", 1))
    assert composed()["faces"]["n"] == 321 == compose()["faces"]["n"]
