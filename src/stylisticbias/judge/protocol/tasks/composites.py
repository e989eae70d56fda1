"""Two-person side-by-side composites (VIGNETTE Sec. 1.5): two identities' images in one image.

The layout is fixed and versioned (:class:`CompositeLayout`): a white canvas of two square
cells ``cell`` pixels wide and high, ``gap`` pixels apart, so every composite has the same size
(``2 * cell + gap`` by ``cell``; the default 336 + 16 + 336 = 688 by 336, the paper's 672 x 336
resize of a two-person image plus our gap). Each source image is converted to RGB and scaled to
fit its cell with its aspect ratio kept (both people at the same displayed size; Lanczos
resampling, a source exactly ``cell`` x ``cell`` is pasted unchanged), centred in the cell:
the left identity in the cell at x = 0, the right one at x = ``cell + gap``
(:func:`placements`). The paper concatenates the two images and blends a 50-px seam; we keep
a plain gap so each person's pixels are exactly one source's (the seam blend mixes them).

Composites are derived images: :func:`composite_file` writes each one once, named by the
sha256 of the two sources' bytes (in left, right order) and the layout's fingerprint, so a
composite is rebuilt only when a source image or the layout changes, and swapping the order is
another file (the mirrored placement). Records keep which image is on the left (``left_id``,
``right_id`` of :mod:`.records`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stylisticbias.outputs import atomic_path


@dataclass(frozen=True)
class CompositeLayout:
    """The canvas of a two-person composite (see the module doc).

    ``cell``: the side of each person's square cell (pixels); ``gap``: the white band between
    the cells; ``background``: the canvas colour (RGB); ``version``: bumped when the drawing
    changes, so cached composites of an older drawing are not reused.
    """

    cell: int = 336
    gap: int = 16
    background: tuple[int, int, int] = (255, 255, 255)
    version: int = 1

    def __post_init__(self) -> None:
        if self.cell < 1 or self.gap < 0:
            raise ValueError(f"composite cell must be >= 1 and gap >= 0; got {self}")

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of every composite."""
        return (2 * self.cell + self.gap, self.cell)

    def fingerprint(self) -> str:
        """A short hash of the layout (part of every cached composite's name)."""
        blob = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


#: The layout the judge stage draws composites with.
LAYOUT = CompositeLayout()


def fitted_size(width: int, height: int, cell: int) -> tuple[int, int]:
    """A ``width`` x ``height`` image scaled to fit a ``cell`` square, aspect kept."""
    scale = cell / max(width, height)
    return (max(1, round(width * scale)), max(1, round(height * scale)))


def placements(
    left_size: tuple[int, int], right_size: tuple[int, int], layout: CompositeLayout = LAYOUT
) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    """The boxes ``(x0, y0, x1, y1)`` where the left and right sources (given their sizes)
    are drawn on the canvas."""
    boxes = []
    for i, (w, h) in enumerate((left_size, right_size)):
        fw, fh = fitted_size(w, h, layout.cell)
        x0 = i * (layout.cell + layout.gap) + (layout.cell - fw) // 2
        y0 = (layout.cell - fh) // 2
        boxes.append((x0, y0, x0 + fw, y0 + fh))
    return boxes[0], boxes[1]


def compose(left: Any, right: Any, layout: CompositeLayout = LAYOUT) -> Any:
    """The composite of two PIL images: ``left`` in the left cell, ``right`` in the right."""
    from PIL import Image

    out = Image.new("RGB", layout.size, layout.background)
    srcs = (left.convert("RGB"), right.convert("RGB"))
    for im, box in zip(srcs, placements(srcs[0].size, srcs[1].size, layout), strict=True):
        want = (box[2] - box[0], box[3] - box[1])
        out.paste(im if im.size == want else im.resize(want, Image.Resampling.LANCZOS), box[:2])
    return out


def composite_name(left_sha256: str, right_sha256: str, layout: CompositeLayout = LAYOUT) -> str:
    """The cache file name of a composite: its sources' bytes in order and the layout."""
    key = hashlib.sha256(f"{left_sha256}|{right_sha256}|{layout.fingerprint()}".encode())
    return f"{key.hexdigest()[:32]}.png"


def composite_file(
    left: tuple[str, str], right: tuple[str, str], cache: Path, layout: CompositeLayout = LAYOUT
) -> Path:
    """The composite of two image files, ``(path, sha256)`` each, written once to ``cache``
    (atomically; an existing file of the same name is the same composite and is reused)."""
    from PIL import Image

    path = cache / composite_name(left[1], right[1], layout)
    if path.is_file():
        return path
    with Image.open(left[0]) as a, Image.open(right[0]) as b:
        img = compose(a, b, layout)
    cache.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        img.save(tmp, format="PNG")
    return path
