"""Special and over-large files in an imported image set are refused before they are opened.

A copy-mode image symlinked to ``/dev/zero`` was read without bound (MemoryError after a minute),
a FIFO named ``.png`` hung the faces stage. Now every read of an imported or
referenced image goes through :mod:`stylisticbias.dataset.regular_files`: ``stat`` first, a
regular file within ``generator.max_image_bytes`` only.

None of these tests can hang or exhaust memory on a regression: every ``open`` of a forbidden
target (``builtins.open``, ``io.open``, ``os.open``) raises :class:`OpenedForbidden` (a
``BaseException``, so no ``except Exception`` swallows it) instead of opening it, and each FIFO
is served by a writer thread (:class:`ServedFifo`) that answers any reader that gets past the
spy with a few bytes and end-of-file -- the test then fails on the count of readers.
"""

from __future__ import annotations

import builtins
import io
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from import_fixtures import import_params, meta_of, output, write_release, write_table

from stylisticbias.benchmark import Benchmark
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.parse import config_from_params
from stylisticbias.validate import validate_params

RELEASE = Path("data/import/release")
TABLE = "data/import/set.csv"
_REAL_OS_OPEN = os.open  # the fixtures' own opens, whatever a spy patches


class OpenedForbidden(BaseException):  # a test signal, not an error
    """Raised in place of opening a path the code must never open."""


@pytest.fixture
def forbidden(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[set[str], list[str]]]:
    """(targets, opened): add a real path to ``targets``; every attempt to open it is recorded
    in ``opened`` and raises :class:`OpenedForbidden` instead."""
    targets: set[str] = set()
    opened: list[str] = []
    real_open, real_os_open = builtins.open, _REAL_OS_OPEN

    def check(file: object) -> None:
        if isinstance(file, (str, bytes, os.PathLike)) and targets:
            real = os.path.realpath(os.fsdecode(file))
            if real in targets:
                opened.append(real)
                raise OpenedForbidden(real)

    def spy_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        check(file)
        return real_open(file, *args, **kwargs)

    def spy_os_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        check(path)
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    yield targets, opened


class ServedFifo:
    """A FIFO at ``path`` whose writer thread answers every reader with junk and end-of-file
    (a reader never blocks) and counts them in ``readers``."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.readers = 0
        self._closing = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            fd = _REAL_OS_OPEN(self.path, os.O_WRONLY)  # blocks until a reader opens the FIFO
            try:
                if self._closing:
                    return
                self.readers += 1
                os.write(fd, b"not a png")
            except OSError:
                pass  # the reader went away
            finally:
                os.close(fd)

    def close(self) -> None:
        """Stop the writer: our own reader releases its pending open (no timeout needed)."""
        self._closing = True
        fd = _REAL_OS_OPEN(self.path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            self._thread.join()
        finally:
            os.close(fd)


@pytest.fixture
def fifos() -> Iterator[list[ServedFifo]]:
    """FIFOs made by a test (append), each closed at its end."""
    made: list[ServedFifo] = []
    yield made
    for f in made:
        f.close()


def _faces(params: dict) -> Path:
    return build_faces(config_from_params(params))


def _one_line_refusal(params: dict, *phrases: str) -> str:
    with pytest.raises(StylisticBiasError) as exc:
        _faces(params)
    msg = str(exc.value)
    assert "\n" not in msg, msg
    for phrase in phrases:
        assert phrase in msg, msg
    return msg


def _skipped(project: Path, kind: str) -> pd.DataFrame:
    return pd.read_parquet(output(project, kind) / "skipped.parquet")


# --------------------------------------------------------------------------- the import
def test_a_copy_mode_image_linked_to_dev_zero_is_refused_unopened(
    project: Path, bench: Benchmark, forbidden: tuple[set[str], list[str]]
) -> None:
    targets, opened = forbidden
    targets.add("/dev/zero")
    written = write_release(project / RELEASE, bench, 2)
    img = next(iter(written[0].variations.values()))
    img.unlink()
    img.symlink_to("/dev/zero")
    msg = _one_line_refusal(
        import_params(),
        f"{meta_of(img).name}: unreadable image {img.name}",
        "a character device through a symlink, not a regular file",
        "refused, not opened",
        "1 unreadable_image",
    )
    assert "Traceback" not in msg and not output(project, "faces").exists()
    # policy skip: the row is listed with its reason, the rest is imported
    build_faces(config_from_params(import_params("generator.on_error=skip")))
    build_variations(config_from_params(import_params("generator.on_error=skip")))
    skipped = _skipped(project, "variations")
    assert list(skipped["check"]) == ["unreadable_image"]
    assert "character device" in skipped["reason"].iloc[0]
    assert opened == []


@pytest.mark.parametrize("where", ["base image", "variation image", "metadata"])
def test_a_fifo_under_an_image_or_metadata_name_is_refused_unopened(
    project: Path,
    bench: Benchmark,
    forbidden: tuple[set[str], list[str]],
    fifos: list[ServedFifo],
    where: str,
) -> None:
    targets, opened = forbidden
    written = write_release(project / RELEASE, bench, 2)
    face = written[1]
    path = {
        "base image": face.folder / f"{face.stem}.png",
        "variation image": next(iter(face.variations.values())),
        "metadata": meta_of(next(iter(face.variations.values()))),
    }[where]
    path.unlink()
    fifos.append(ServedFifo(path))
    targets.add(os.path.realpath(path))
    check = "unreadable_metadata" if where == "metadata" else "unreadable_image"
    _one_line_refusal(
        import_params(), path.name, "a FIFO (named pipe)", "not a regular file", f"1 {check}"
    )
    assert opened == [] and fifos[0].readers == 0
    assert not output(project, "faces").exists()


def test_a_table_row_naming_a_fifo_or_a_folder_names_the_row(
    project: Path, bench: Benchmark, forbidden: tuple[set[str], list[str]], fifos: list[ServedFifo]
) -> None:
    targets, opened = forbidden
    written = write_release(project / RELEASE, bench, 2)
    write_table(project / RELEASE, project / TABLE, written, bench)
    df = pd.read_csv(project / TABLE, dtype=str, keep_default_na=False)
    fifos.append(ServedFifo(project / "data/import/pipe.png"))
    targets.add(os.path.realpath(project / "data/import/pipe.png"))
    (project / "data/import/folder.png").mkdir()
    variations = df.index[df["attribute"] != ""]
    df.loc[variations[0], "path"] = "pipe.png"
    df.loc[variations[1], "path"] = "folder.png"
    df.to_csv(project / TABLE, index=False)
    params = import_params(
        "generator.layout=table", f"generator.source={TABLE}", "generator.on_error=skip"
    )
    build_faces(config_from_params(params))
    build_variations(config_from_params(params))
    skipped = _skipped(project, "variations").set_index("source")
    for line, kind in (
        (variations[0] + 2, "a FIFO (named pipe)"),
        (variations[1] + 2, "a directory"),
    ):
        reason = next(r for s, r in skipped["reason"].items() if f"set.csv line {line} " in s)
        assert kind in reason and "refused, not opened" in reason, reason
    assert set(skipped["check"]) == {"unreadable_image"} and len(skipped) == 2
    assert opened == [] and fifos[0].readers == 0


def test_an_over_large_image_is_refused_unread(
    project: Path, bench: Benchmark, forbidden: tuple[set[str], list[str]]
) -> None:
    targets, opened = forbidden
    written = write_release(project / RELEASE, bench, 2)
    bound = max(p.stat().st_size for p in (project / RELEASE).rglob("*.png")) + 1
    big = next(iter(written[0].variations.values()))
    with big.open("ab") as fh:  # a PNG with trailing bytes still decodes: only its size is wrong
        fh.write(b"\0" * bound)
    size = big.stat().st_size
    targets.add(os.path.realpath(big))
    msg = _one_line_refusal(
        import_params(f"generator.max_image_bytes={bound}"),
        f"{meta_of(big).name}: image {big.name} is larger than generator.max_image_bytes",
        f"({size:,} > {bound:,} bytes); refused, not read",
        "1 too_large",
    )
    assert "Traceback" not in msg
    params = import_params(f"generator.max_image_bytes={bound}", "generator.on_error=skip")
    build_faces(config_from_params(params))
    build_variations(config_from_params(params))
    skipped = _skipped(project, "variations")
    assert list(skipped["check"]) == ["too_large"]
    assert opened == []
    # the default bound (64 MiB) takes the same file
    targets.clear()
    build_faces(config_from_params(import_params()))


@pytest.mark.parametrize("value", ["0", "-1"])
def test_the_bound_is_checked_at_compose_time(project: Path, value: str) -> None:
    with pytest.raises(StylisticBiasError) as exc:
        validate_params(import_params(f"generator.max_image_bytes={value}"))
    msg = str(exc.value)
    assert "\n" not in msg and f"generator.max_image_bytes {value}" in msg and ">= 1" in msg, msg


def test_a_referenced_base_face_swapped_for_a_fifo_is_refused_by_later_stages(
    project: Path, bench: Benchmark, forbidden: tuple[set[str], list[str]], fifos: list[ServedFifo]
) -> None:
    """In place (``materialize=reference``) the variations stage re-hashes every base face."""
    targets, opened = forbidden
    written = write_release(project / RELEASE, bench, 2)
    params = import_params("generator.materialize=reference")
    build_faces(config_from_params(params))
    base = written[0].folder / f"{written[0].stem}.png"
    base.unlink()
    fifos.append(ServedFifo(base))
    targets.add(os.path.realpath(base))
    with pytest.raises(StylisticBiasError) as exc:
        build_variations(config_from_params(params))
    msg = str(exc.value)
    assert "\n" not in msg and f"{base.name} is a FIFO (named pipe)" in msg, msg
    assert f"face {written[0].stem}, faces.parquet row" in msg and "refused, not opened" in msg
    assert opened == [] and fifos[0].readers == 0


# --------------------------------------------------------------------------- the reader
def test_the_reader_refuses_every_special_kind_before_opening(
    tmp_path: Path, forbidden: tuple[set[str], list[str]], fifos: list[ServedFifo]
) -> None:
    from stylisticbias.dataset import regular_files as rf  # here: the others run without it

    targets, opened = forbidden
    (tmp_path / "dir.png").mkdir()
    fifos.append(ServedFifo(tmp_path / "fifo.png"))
    (tmp_path / "zero.png").symlink_to("/dev/zero")
    sock = socket.socket(socket.AF_UNIX)
    sock_path = tmp_path / "s.png"
    try:
        sock.bind(str(sock_path))
    except OSError:  # a path too long for AF_UNIX: the other kinds still count
        sock_path = None
    kinds = {"dir.png": "a directory", "fifo.png": "a FIFO", "zero.png": "a character device"}
    if sock_path is not None:
        kinds["s.png"] = "a socket"
    targets |= {os.path.realpath(tmp_path / n) for n in kinds}
    try:
        for name, kind in kinds.items():
            for read in (
                lambda p: rf.read_regular(p, "w", 10),
                lambda p: rf.sha256_regular(p, "w"),
                lambda p: rf.copy_regular(p, tmp_path / "out", "w", 10),
            ):
                with pytest.raises(rf.SpecialFile) as exc:
                    read(tmp_path / name)
                assert str(exc.value).startswith(f"w: {name} is {kind}"), exc.value
                assert not (tmp_path / "out").exists()
    finally:
        sock.close()
    assert opened == [] and fifos[0].readers == 0


def test_the_reader_bounds_size_before_and_while_reading(
    tmp_path: Path, forbidden: tuple[set[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from stylisticbias.dataset import regular_files as rf

    targets, opened = forbidden
    f = tmp_path / "a.png"
    f.write_bytes(b"x" * 11)
    targets.add(os.path.realpath(f))
    with pytest.raises(rf.TooLargeFile, match=r"^w: a.png is 11 bytes, over the bound of 10"):
        rf.read_regular(f, "w", 10)
    with pytest.raises(rf.TooLargeFile):
        rf.copy_regular(f, tmp_path / "out", "w", 10)
    assert opened == [] and not (tmp_path / "out").exists()
    targets.clear()
    assert rf.read_regular(f, "w", 11) == b"x" * 11
    # a file that grows after its stat is cut at the bound, not read to its end
    real_stat = os.stat
    monkeypatch.setattr(
        rf.os, "stat", lambda p, *a, **k: os.stat_result((*real_stat(p)[:6], 5, *real_stat(p)[7:]))
    )
    with pytest.raises(rf.TooLargeFile, match="grew past the bound of 10"):
        rf.read_regular(f, "w", 10)
    with pytest.raises(rf.TooLargeFile, match="grew past"):
        rf.copy_regular(f, tmp_path / "out", "w", 10)
    assert not (tmp_path / "out").exists()
