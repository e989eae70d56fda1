"""The generator interface shared by the procedural, diffusers and gemini backends."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from PIL import Image

from stylisticbias.benchmark import VariationValue

Status = Literal["ok", "refused", "blocked", "error"]


@dataclass(frozen=True)
class FaceSpec:
    """One base identity to render: its demographic cell, identity seed and Fig. 9 prompt."""

    face_id: str
    age: str
    gender: str
    ethnicity: str
    body_type: str
    seed: int
    prompt: str


@dataclass(frozen=True)
class EditSpec:
    """One single-attribute edit of a base face, with its Fig. 10/11 prompt and seed."""

    face: FaceSpec
    variation: VariationValue
    prompt: str
    seed: int


@dataclass
class GenResult:
    """What a backend returns per request: an image, or a refusal/block/error and its reason."""

    image: Image.Image | None
    status: Status = "ok"
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.status == "ok" and self.image is None:
            raise ValueError("GenResult(status='ok') needs an image")


class Generator(ABC):
    """A backend that draws base faces and applies one edit at a time.

    Implementations are constructed by Hydra from ``conf/generator/<name>.yaml``
    (``_target_`` = the class) and must be deterministic given the specs' seeds where the
    backend allows it. Both methods are batched: the dataset builder passes as many requests
    as the backend's ``batch_size`` and expects one :class:`GenResult` per request, in order.
    """

    #: short backend name written into the manifests' ``generator`` column
    name: str = "generator"
    #: file extension the dataset builder saves images with (png, jpg or webp)
    file_format: str = "png"
    #: how many requests the builder passes per call
    batch_size: int = 8
    #: ``generate_faces`` draws what its prompt says (a text-to-image model), so it can render
    #: any prompt, e.g. a SODA object prompt; False: it draws faces whatever the prompt
    text_to_image: bool = False

    @abstractmethod
    def generate_faces(self, specs: Sequence[FaceSpec]) -> list[GenResult]:
        """Render base faces (Fig. 9 prompts in ``spec.prompt``)."""

    @abstractmethod
    def edit(self, base: Image.Image, edits: Sequence[EditSpec]) -> list[GenResult]:
        """Apply each edit (all of the same base face) to ``base``; one result per edit."""

    def unsupported(self, variations: Sequence[VariationValue]) -> dict[str, str]:
        """Values of ``variations`` this backend cannot render: ``{slug: reason}``.

        Checked before any image is made, so a typo in ``conf/`` fails the stage at once.
        Default: none (prompt-driven backends can be asked for anything).
        """
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (GPU memory, HTTP clients). Default: nothing."""
