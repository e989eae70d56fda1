"""The imported image sets (``data/import``) reach the dataset stages through the dataset
group's file: a changed set changes that file (so faces and variations re-run), the same bytes
give the same hash on any machine, and an unchanged file is not read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import stylisticbias.stage_inputs as si
from stylisticbias.config import ROOT


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / "data/import" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def test_a_changed_image_set_changes_the_hash(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"set1/a.png": b"a", "set1/b.png": b"b"})
    before = si.input_hash(root, si.IMPORT_DIR)
    (root / "data/import/set1/c.png").write_bytes(b"c")
    added = si.input_hash(root, si.IMPORT_DIR)
    (root / "data/import/set1/a.png").write_bytes(b"A")
    changed = si.input_hash(root, si.IMPORT_DIR)
    assert len({before, added, changed}) == 3


def test_the_same_bytes_hash_alike_whatever_their_times(tmp_path: Path) -> None:
    one = _tree(tmp_path / "one", {"s/a.png": b"a", "s/b.png": b"b"})
    two = _tree(tmp_path / "two", {"s/a.png": b"a", "s/b.png": b"b"})
    os.utime(two / "data/import/s/a.png", ns=(1, 1))
    assert si.input_hash(one, si.IMPORT_DIR) == si.input_hash(two, si.IMPORT_DIR)


def test_an_unchanged_file_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path, {f"s/{i}.png": bytes([i]) * 10 for i in range(5)})
    first = si.input_hash(root, si.IMPORT_DIR)
    assert (root / si.HASH_STATE).is_file()
    opened: list[Path] = []
    real_open = Path.open

    def counting_open(self: Path, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        if "data/import" in self.as_posix():
            opened.append(self)
        return real_open(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", counting_open)
    assert si.input_hash(root, si.IMPORT_DIR) == first and opened == []
    (root / "data/import/s/0.png").write_bytes(b"new bytes")
    opened.clear()  # the write above
    assert si.input_hash(root, si.IMPORT_DIR) != first
    assert [p.name for p in opened] == ["0.png"]  # only the changed file


def test_a_fifo_in_an_image_set_is_skipped_not_opened(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"s/a.png": b"a"})
    before = si.input_hash(root, si.IMPORT_DIR)
    os.mkfifo(root / "data/import/s/b.png")  # opening it would block the check stage
    assert si.input_hash(root, si.IMPORT_DIR) == before


def test_the_dataset_group_hashes_the_image_sets_and_reporting_has_its_own_file() -> None:
    dataset = next(g for g in si.GROUPS if g.name == "dataset")
    assert si.IMPORT_DIR in dataset.inputs
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    deps = {
        name: [str(d) for d in (st.get("do", st).get("deps", []))] for name, st in stages.items()
    }
    assert not [n for n, d in deps.items() if si.IMPORT_DIR in d]  # no DVC column of its own
    assert (
        "data/config/${key}/dataset.yaml" in deps["faces"]
        and "data/config/${key}/dataset.yaml" in deps["variations"]
    )
    for name in ("analyze", "calibrate"):
        assert (
            "data/config/${key}/analysis.yaml" in deps[name]
            and "data/config/${key}/report.yaml" not in deps[name]
        )
    assert "data/config/${key}/report.yaml" in deps["report"]
    assert "data/config/${key}/analysis.yaml" not in deps["report"]
    for name in ("audit", "track"):  # run-wide: every protocol's report, through its manifest
        assert deps[name][:2] == ["data/config/audit.yaml", "data/report_manifests"]
    assert si.readers("tracking.experiment_name") == ("report", "audit")
