"""The judge-engine interface shared by the hf and simulated engines."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from PIL import Image

from stylisticbias.benchmark import Benchmark
from stylisticbias.judge.protocol.settings import JudgeSettings


@dataclass(frozen=True)
class ImageItem:
    """One image to judge, with the ids and attributes carried through every batch."""

    image_id: str
    face_id: str
    path: str  # absolute path of the image file
    is_base: bool
    attrs: Mapping[str, Any] = field(default_factory=dict)  # age, gender, ..., attribute, value
    #: sha256 of the image bytes (the manifest's, checked before judging); stored with every
    #: record so a record is reused only for these bytes ("" where unknown)
    sha256: str = ""


class JudgeEngine(ABC):
    """Computes forced-choice judgments for batches of images.

    ``judge`` returns rows of the ``JUDGMENTS`` schema (``stylisticbias.schemas``) for every
    (image x scenario x ordering [x seed]) the run asks for.
    """

    #: whether the runner must decode the image files (the simulated engine never does)
    reads_pixels: bool = True
    #: whether the engine holds weights to place on devices: Lightning's Trainer runs it, one
    #: replica per rank (``lightning:`` settings); an engine without (the simulated judge) is
    #: run in the stage's process (:mod:`stylisticbias.judge.inline_runner`)
    needs_device: bool = True

    def __init__(
        self,
        model_cfg: Mapping[str, Any],
        engine_cfg: Mapping[str, Any],
        judge_cfg: Mapping[str, Any],
        benchmark: Benchmark,
    ) -> None:
        self.model_cfg = dict(model_cfg)
        self.engine_cfg = dict(engine_cfg)
        #: the judge section typed and checked (keys it leaves out: ``conf/config.yaml``)
        self.settings = JudgeSettings.from_config(judge_cfg, benchmark.ordering_ids)
        self.judge_cfg = dict(judge_cfg)
        # `all` (or absent) -> every ordering of the protocol; a list is checked against it
        self.judge_cfg["orderings"] = list(self.settings.orderings)
        self.benchmark = benchmark
        self.model_name = str(model_cfg["name"])

    @classmethod
    def check_runnable(
        cls,
        model_cfg: Mapping[str, Any],
        engine_cfg: Mapping[str, Any],
        *,
        n_prompts: int | None = None,
        n_images: int | None = None,
    ) -> None:
        """Fail in one line, within seconds and before any output is touched, when this model
        cannot run at all (weights missing, endpoint down, key unset); given the run's size
        (``n_images`` x ``n_prompts``), an engine may warn that it will be very slow. Nothing by
        default."""
        return None

    def setup(self, device: str = "cpu") -> None:  # noqa: B027 - optional hook
        """Load weights onto ``device`` (called once per process before the first batch)."""

    @abstractmethod
    def judge(
        self, items: Sequence[ImageItem], images: Sequence[Image.Image | None]
    ) -> pd.DataFrame:
        """Judge a batch; ``images[i]`` is None when ``reads_pixels`` is False."""

    def run_params(self) -> dict[str, Any]:
        """Parameters logged to MLflow for this run (model, engine, decoding, ...)."""
        return {
            "model": self.model_name,
            "engine": self.engine_cfg.get("name"),
            "decoding": self.engine_cfg.get("decoding"),
            "temperature": self.settings.temperature,
            "orderings": list(self.settings.orderings),
            "seeds": list(self.settings.seeds),
        }
