"""Two-person composites: the fixed layout, pixel placement, the swapped order's mirrored
placement and the content-hashed cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from stylisticbias.judge.protocol.tasks import composites as comp
from stylisticbias.judge.protocol.tasks.composites import (
    LAYOUT,
    CompositeLayout,
    compose,
    composite_file,
    composite_name,
    placements,
)


def _noise(seed: int, size: tuple[int, int]) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8), "RGB")


def _crop(img: Image.Image, box: tuple[int, int, int, int]) -> np.ndarray:
    return np.asarray(img.crop(box))


def test_layout_is_fixed_and_sources_sit_at_their_boxes() -> None:
    a, b = _noise(1, (336, 336)), _noise(2, (336, 336))
    img = compose(a, b)
    assert img.size == LAYOUT.size == (688, 336)
    left, right = placements(a.size, b.size)
    assert left == (0, 0, 336, 336) and right == (352, 0, 688, 336)
    # exactly the source pixels at the recorded positions, white in the gap
    assert np.array_equal(_crop(img, left), np.asarray(a))
    assert np.array_equal(_crop(img, right), np.asarray(b))
    assert (_crop(img, (336, 0, 352, 336)) == 255).all()
    # deterministic: the same inputs give the same bytes
    assert compose(a, b).tobytes() == img.tobytes()


def test_swapped_order_mirrors_the_placement() -> None:
    a, b = _noise(3, (336, 336)), _noise(4, (336, 336))
    ab, ba = compose(a, b), compose(b, a)
    left, right = placements(a.size, b.size)
    assert np.array_equal(_crop(ab, left), _crop(ba, right))
    assert np.array_equal(_crop(ab, right), _crop(ba, left))
    assert not np.array_equal(np.asarray(ab), np.asarray(ba))


def test_sources_of_other_sizes_fit_their_cell_at_one_scale() -> None:
    """A 256-px face is scaled up to the cell; a wide image keeps its aspect, centred."""
    layout = CompositeLayout(cell=100, gap=10)
    face, wide = _noise(5, (256, 256)), _noise(6, (200, 100))
    img = compose(face, wide, layout)
    left, right = placements(face.size, wide.size, layout)
    assert left == (0, 0, 100, 100) and right == (110, 25, 210, 75)
    want_left = np.asarray(face.resize((100, 100), Image.Resampling.LANCZOS))
    want_right = np.asarray(wide.resize((100, 50), Image.Resampling.LANCZOS))
    assert np.array_equal(_crop(img, left), want_left)
    assert np.array_equal(_crop(img, right), want_right)
    assert (_crop(img, (110, 0, 210, 25)) == 255).all()  # above the wide image: background
    with pytest.raises(ValueError, match="cell must be"):
        CompositeLayout(cell=0)


def test_cache_is_content_hashed_and_never_rebuilt(tmp_path: Path, monkeypatch) -> None:
    pa, pb = tmp_path / "a.png", tmp_path / "b.png"
    _noise(7, (336, 336)).save(pa)
    _noise(8, (336, 336)).save(pb)
    cache = tmp_path / "cache"
    f = composite_file((str(pa), "sha-a"), (str(pb), "sha-b"), cache)
    assert f.name == composite_name("sha-a", "sha-b")
    with Image.open(f) as got:
        assert np.array_equal(np.asarray(got), np.asarray(compose(Image.open(pa), Image.open(pb))))

    def boom(*_a, **_k):
        raise AssertionError("rebuilt a cached composite")

    monkeypatch.setattr(comp, "compose", boom)
    assert composite_file((str(pa), "sha-a"), (str(pb), "sha-b"), cache) == f
    # another order, other bytes or another layout is another file
    names = {
        composite_name("sha-b", "sha-a"),
        composite_name("sha-a", "sha-c"),
        composite_name("sha-a", "sha-b", CompositeLayout(version=2)),
        f.name,
    }
    assert len(names) == 4
