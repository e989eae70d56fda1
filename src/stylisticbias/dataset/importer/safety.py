"""What the import refuses before opening a file, and what it leaves out on purpose.

**Path rule** (the judge's, :func:`stylisticbias.outputs.safe_member`, applied to the source
before any image is opened): an image must lie inside the folder of the manifest that lists it
(the table's folder, the release or pairs root), judged on the path as written -- an absolute
path elsewhere or one that climbs out with ``..`` is refused; with ``materialize=reference`` the
image is read in place by every later stage, so it must also *resolve* inside the data root (a
symlink leading out of ``data/`` is refused). A refused row is an ``unsafe_path`` problem naming
the manifest row, handled by ``generator.on_error`` like any other; its file is never opened.

**Ignored files**: files under the source that no row of the layout claims -- loose files at a
release root, a misnamed ``_metadata.json``, notes, images a table does not list -- are listed
(:func:`ignored_files`) in a log line and in each stage's summary (``import.json``,
``coverage.json``), never dropped silently.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from stylisticbias.dataset.importer.sources import IMAGE_EXTS, Entry, Problem

#: ``<_io.BytesIO object at 0x7f...>`` and the like: never in a message or a ``reason`` cell.
_ADDRESS = re.compile(r"<[^<>]*? at 0x[0-9a-fA-F]+>|\bat 0x[0-9a-fA-F]+\b")


def clean_message(text: str) -> str:
    """``text`` without Python object reprs that carry a memory address."""
    return _ADDRESS.sub("the file", text)


def _lexically_inside(path: Path, folder: Path) -> bool:
    return Path(os.path.normpath(path)).is_relative_to(os.path.normpath(folder))


def path_problem(e: Entry, folder: Path, materialize: str, data_root: Path) -> Problem | None:
    """Why ``e``'s image may not be opened (None if it may); see the module docstring."""
    if e.problem is not None and e.problem.check == "missing_image" and e.image == folder:
        return None  # an empty path cell: already its own problem
    if not _lexically_inside(e.image, folder):
        return Problem(
            "unsafe_path",
            f"{e.where}: image path leaves the manifest's folder {folder.name}/ (absolute or "
            "'..'); refused, not read -- list images inside it",
        )
    if materialize == "reference":
        real = Path(os.path.realpath(e.image))
        if not real.is_relative_to(os.path.realpath(data_root)):
            return Problem(
                "unsafe_path",
                f"{e.where}: image {e.image.name} is a link leading out of the data root "
                f"{data_root.name}/ (materialize=reference reads it in place); refused, not read "
                "-- copy the file in or use materialize=copy",
            )
    return None


def manifest_folder(layout: str, source: Path) -> Path:
    """The folder every image of ``source`` must lie in (a table's folder, else the source)."""
    return source.parent if layout == "table" else source


def ignored_files(layout: str, source: Path, entries: Iterable[Entry]) -> list[str]:
    """Files under the source that no entry claims, relative to its folder, sorted.

    Release and pairs layouts: every non-hidden file (loose files at the root, misnamed
    metadata, notes...); a table: the image files of its folder tree it does not list.
    """
    folder = manifest_folder(layout, source)
    if not folder.is_dir():
        return []
    claimed = {os.path.normpath(source)}
    for e in entries:
        claimed.add(os.path.normpath(e.image))
        head = e.where.split(" (", 1)[0] if layout == "release" else ""
        if head:
            claimed.add(os.path.normpath(head))
    if layout == "pairs":
        claimed.add(os.path.normpath(source / "labels.csv"))
    if layout == "counterfactual":
        claimed |= {os.path.normpath(source / m) for m in ("edits.csv", "edits.parquet")}
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith("."):
                continue
            path = os.path.normpath(os.path.join(dirpath, name))
            if path in claimed:
                continue
            if layout == "table" and Path(name).suffix.lower() not in IMAGE_EXTS:
                continue
            out.append(Path(os.path.relpath(path, folder)).as_posix())
    return sorted(out)


def describe_ignored(ignored: list[str], limit: int = 10) -> str:
    """``a, b, c (+N more)`` for a log line."""
    head = ", ".join(ignored[:limit])
    return head + (f" (+{len(ignored) - limit} more)" if len(ignored) > limit else "")
