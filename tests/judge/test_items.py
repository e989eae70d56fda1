"""The judge's image check: a manifest image that is missing, a special file or changed bytes is
one line naming it, and a special file is never opened (a FIFO would block the stage)."""

from __future__ import annotations

import builtins
import hashlib
import io
import os
from pathlib import Path

import pytest

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.judge.items import verify_images


def _item(path: Path, image_id: str = "F0001-base") -> ImageItem:
    return ImageItem(image_id=image_id, face_id="F0001", path=str(path), is_base=True)


@pytest.fixture
def no_open_of(monkeypatch: pytest.MonkeyPatch):
    """Fail the test (instead of blocking) if the given paths are ever opened."""
    forbidden: set[str] = set()
    real_open, real_os_open = builtins.open, os.open

    def guard(path: object) -> None:
        if str(path) in forbidden:
            raise AssertionError(f"opened {path}")

    def bopen(path, *a, **k):
        guard(path)
        return real_open(path, *a, **k)

    def oopen(path, *a, **k):
        guard(path)
        return real_os_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", bopen)
    monkeypatch.setattr(io, "open", bopen)
    monkeypatch.setattr(os, "open", oopen)
    return forbidden


def test_a_fifo_in_place_of_an_image_is_refused_unopened(tmp_path: Path, no_open_of) -> None:
    fifo = tmp_path / "F0001-base.png"
    os.mkfifo(fifo)
    no_open_of.add(str(fifo))
    with pytest.raises(StylisticBiasError, match=r"F0001-base.*FIFO.*not a regular file") as err:
        verify_images([_item(fifo)], {"F0001-base": "0" * 64})
    assert "\n" not in str(err.value)


def test_a_directory_in_place_of_an_image_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "F0001-base.png"
    d.mkdir()
    with pytest.raises(StylisticBiasError, match="a directory, not a regular file"):
        verify_images([_item(d)], {"F0001-base": "0" * 64})


def test_missing_and_changed_images_are_named(tmp_path: Path) -> None:
    gone = tmp_path / "gone.png"
    with pytest.raises(StylisticBiasError, match="missing image F0001-base"):
        verify_images([_item(gone)], {"F0001-base": "0" * 64})
    img = tmp_path / "img.png"
    img.write_bytes(b"png bytes")
    good = hashlib.sha256(b"png bytes").hexdigest()
    verify_images([_item(img)], {"F0001-base": good})  # the bytes of the manifest: accepted
    with pytest.raises(StylisticBiasError, match="no longer matches the manifest's sha256"):
        verify_images([_item(img)], {"F0001-base": "0" * 64})
