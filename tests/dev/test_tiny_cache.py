"""The tiny-checkpoint cache: one build per builder hash, shared by every checkout, copied
into the folder a test or config names; a checkpoint from other builder code is rebuilt."""

from __future__ import annotations

from pathlib import Path

import pytest

from stylisticbias_dev import tiny


@pytest.fixture
def builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Stand-in builder (writes a config naming arch and seed) counting its calls; the cache
    under ``tmp_path/cache``."""
    calls: list[tuple[str, int]] = []

    def fake_build(arch: str, out: str | Path, seed: int = 0) -> Path:
        calls.append((arch, seed))
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "config.json").write_text(f'{{"arch": "{arch}", "seed": {seed}}}')
        return Path(out)

    monkeypatch.setattr(tiny, "build", fake_build)
    monkeypatch.setenv("STYLISTICBIAS_TINY_CACHE", str(tmp_path / "cache"))
    return calls


def test_builder_hash_names_arch_seed_and_is_stable() -> None:
    assert tiny.builder_hash("llava_next", 0) == tiny.builder_hash("llava_next", 0)
    assert tiny.builder_hash("llava_next", 0) != tiny.builder_hash("llava_next", 1)
    assert tiny.builder_hash("llava_next", 0) != tiny.builder_hash("gemma3", 0)


def test_one_build_serves_every_checkout(builds: list, tmp_path: Path) -> None:
    a = tiny.ensure_built("gemma3", tmp_path / "clone1" / "gemma3")
    b = tiny.ensure_built("gemma3", tmp_path / "clone2" / "gemma3")
    tiny.ensure_built("gemma3", a)  # already current: nothing happens
    assert builds == [("gemma3", 0)]
    assert (a / "config.json").read_text() == (b / "config.json").read_text()
    key = tiny.builder_hash("gemma3", 0)
    assert (a / tiny.BUILDER_STAMP).read_text() == key
    assert (tmp_path / "cache" / f"gemma3-seed0-{key}" / "config.json").exists()
    tiny.ensure_built("gemma3", tmp_path / "clone3" / "gemma3", seed=4)
    assert builds == [("gemma3", 0), ("gemma3", 4)]


def test_a_checkpoint_from_other_builder_code_is_replaced(builds: list, tmp_path: Path) -> None:
    out = tmp_path / "ckpt"
    out.mkdir()
    (out / "config.json").write_text("{}")  # built before stamps, or by older builder code
    (out / "stale.bin").write_text("x")
    tiny.ensure_built("internvl", out)
    assert builds == [("internvl", 0)]
    assert not (out / "stale.bin").exists()
    assert '"internvl"' in (out / "config.json").read_text()
    (out / tiny.BUILDER_STAMP).write_text("0" * 16)
    tiny.ensure_built("internvl", out)  # stale stamp: recopied from the cache, not rebuilt
    assert builds == [("internvl", 0)]
    assert (out / tiny.BUILDER_STAMP).read_text() == tiny.builder_hash("internvl", 0)
