"""The render cache verifies its entries: a bad one is set aside and rendered again."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from stylisticbias.config import compose
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.dataset.render_cache import RenderCache
from stylisticbias.spec.parse import config_from_params


def test_a_corrupt_entry_is_set_aside_and_reported_missing(tmp_path: Path) -> None:
    cache = RenderCache(tmp_path / "cache")
    rec = cache.put("ab" + "0" * 62, Image.new("RGB", (4, 4), (1, 2, 3)), "ok", None, "png")
    assert cache.get(rec.key) == rec
    image = cache.image_path(rec)
    good = image.read_bytes()
    with open(image, "r+b") as fh:  # corrupted in place (a bad disk, a stray write)
        fh.truncate(len(good) // 2)
    fresh = RenderCache(tmp_path / "cache")
    assert fresh.get(rec.key) is None
    assert not image.exists() and image.with_name(image.name + ".corrupt").exists()
    assert not (image.parent / f"{rec.key}.json").exists()
    again = fresh.put(rec.key, Image.new("RGB", (4, 4), (1, 2, 3)), "ok", None, "png")
    assert fresh.get(rec.key) == again and image.read_bytes() == good
    # a same-size change of the bytes is caught too (the check is the hash, not the size)
    image.write_bytes(bytes(b ^ 1 for b in good))
    assert RenderCache(tmp_path / "cache").get(rec.key) is None


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_variations_stage_rebuilds_a_corrupt_cache_entry(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corrupt entry must not be linked into the variations folder with a manifest sha256 that
    contradicts the file: it is rendered again, alone, and the manifest matches every file."""
    log = project / "renders.log"
    monkeypatch.setenv("FAKE_GENERATOR_LOG", str(log))
    params = compose(["faces.n=2"])
    params["generator"] = {"_target_": "fake_generator.FakeGenerator", "workers": 1}
    build_faces(config_from_params(params))
    var = pd.read_parquet(build_variations(config_from_params(params)))
    row = var[var["status"] == "ok"].iloc[3]
    image = project / params["paths"]["variations"] / row["path"]
    entry = next(
        p
        for p in (project / params["paths"]["data"] / ".render-cache").rglob("*.png")
        if p.samefile(image)
    )  # the output is a hard link into the cache
    with open(entry, "r+b") as fh:
        fh.seek(40)
        fh.write(b"\0" * 16)
    renders = len(log.read_text().splitlines())
    var = pd.read_parquet(build_variations(config_from_params(params)))
    redone = log.read_text().splitlines()[renders:]
    assert len(redone) == 1 and redone[0].startswith(f"edit {row['face_id']} "), redone
    for r in var[var["status"] == "ok"].itertuples():
        assert _sha(project / params["paths"]["variations"] / r.path) == r.sha256, r.image_id
    assert entry.with_name(entry.name + ".corrupt").exists()
