"""A tiny deterministic Generator for dataset-builder tests (counts, optionally slows renders)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence

from PIL import Image

from stylisticbias.generators.base import EditSpec, FaceSpec, Generator, GenResult


def _colour(text: str) -> tuple[int, int, int]:
    d = hashlib.sha256(text.encode()).digest()
    return d[0], d[1], d[2]


class FakeGenerator(Generator):
    """Solid-colour images keyed by the request; refuses values listed in ``refuse``."""

    name = "fake"

    def __init__(
        self, size: int = 16, delay: float = 0.0, refuse: Sequence[str] = (), batch_size: int = 4
    ) -> None:
        self.size, self.delay, self.refuse, self.batch_size = size, delay, tuple(refuse), batch_size
        self.log = os.environ.get("FAKE_GENERATOR_LOG")

    def _record(self, what: str) -> None:
        if self.log:
            with open(self.log, "a") as fh:
                fh.write(what + "\n")
        if self.delay:
            time.sleep(self.delay)

    def generate_faces(self, specs: Sequence[FaceSpec]) -> list[GenResult]:
        out = []
        outage = os.environ.get("FAKE_GENERATOR_OUTAGE")  # while this file exists: 503s
        for s in specs:
            self._record(f"face {s.face_id}")
            if outage and os.path.exists(outage):
                out.append(GenResult(None, "error", "HTTP 503: service unavailable"))
                continue
            out.append(
                GenResult(Image.new("RGB", (self.size, self.size), _colour(s.prompt + str(s.seed))))
            )
        return out

    def edit(self, base: Image.Image, edits: Sequence[EditSpec]) -> list[GenResult]:
        out = []
        for e in edits:
            self._record(f"edit {e.face.face_id} {e.variation.slug}")
            if e.variation.value in self.refuse:
                out.append(GenResult(None, "refused", f"policy: {e.variation.value}"))
                continue
            im = base.copy()
            im.paste(_colour(e.prompt + str(e.seed)), (0, 0, self.size // 2, self.size // 2))
            out.append(GenResult(im))
        return out
