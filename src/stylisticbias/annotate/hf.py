"""An annotator on a transformers checkpoint, through the ``hf`` judge engine's parts.

The checkpoint is loaded as the ``hf`` judge engine loads a judged model
(:func:`~stylisticbias.judge.engines.hf.loading.load_model_and_processor`: ``hub_id``,
``revision``, ``dtype``, ``local_build``); a question's prompt is the model's own chat template
with the image(s) first (the base face first for a two-image question), then
:meth:`~.questions.Question.prompt`.

* Every question without an exact distribution gets one ``generate`` reply: seeded per
  (annotator seed, image, question) from sha256, sampled at ``temperature`` (0: greedy), at most
  ``max_tokens`` new tokens, validated by :func:`~.questions.validate_reply`.
* With ``exact: true``, categorical and yes/no questions get the exact answer distribution
  (:mod:`~.exact`): the prompts of one image share their token prefix, which runs once
  (:func:`~stylisticbias.judge.engines.hf.exact.prefill`); each question's suffix plus the
  prefill ``{"answer": "`` is expanded by the engine's exact decoder
  (:func:`~stylisticbias.judge.engines.hf.exact.expand`) with ``generate``'s own logits
  processors at ``exact_settings.temperature``, every finished branch read by the validator. The
  row's reply is the most probable answer's branch; ``probs`` the distribution (each answer,
  ``(invalid)``, ``(undecided)``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from stylisticbias.annotate.base import Annotator, record
from stylisticbias.annotate.exact import PREFILL, answer_decider, exact_fields, exact_question
from stylisticbias.annotate.items import AnnotationItem
from stylisticbias.annotate.questions import Question
from stylisticbias.config import project_root
from stylisticbias.spec.annotate import HFAnnotatorSpec


def _seed(seed: int, image_id: str, question_id: str) -> int:
    h = hashlib.sha256(f"{seed}\x1f{image_id}\x1f{question_id}".encode()).digest()
    return int.from_bytes(h[:4], "big")


class HFAnnotator(Annotator):
    """Answers questions with a transformers image-text-to-text model (module docstring)."""

    engine = "hf"

    def __init__(self, spec: HFAnnotatorSpec) -> None:
        super().__init__(spec)
        self.spec: HFAnnotatorSpec = spec
        self.model: Any = None
        self.processor: Any = None

    @property
    def model_cfg(self) -> dict[str, Any]:
        """The spec as a judged model's section (what the hf loader reads)."""
        s = self.spec
        return {
            "name": s.name,
            "hub_id": s.hub_id,
            "revision": s.revision,
            "dtype": s.dtype,
            "local_build": s.local_build,
        }

    def setup(self) -> None:
        """Load the model and processor once (``device: auto``: CUDA when present)."""
        if self.model is not None:
            return
        from stylisticbias.judge.engines.hf.loading import (
            load_model_and_processor,
            resolve_device,
        )

        device = resolve_device(self.spec.device)
        self.model, self.processor = load_model_and_processor(
            self.model_cfg, device, project_root()
        )

    # ---- one reply ---------------------------------------------------------------------------
    def _inputs(self, text: str, images: Sequence[Image.Image]) -> Any:
        from stylisticbias.judge.protocol.prompts import encode

        img: Any = images[0] if len(images) == 1 else list(images)
        enc = encode(self.processor, text, img, self.spec.chat_template_kwargs)
        enc = enc.to(self.model.device)
        if "pixel_values" in enc and enc["pixel_values"].is_floating_point():
            enc["pixel_values"] = enc["pixel_values"].to(self.model.dtype)
        return enc

    def generate_reply(self, item: AnnotationItem, q: Question, images: Sequence[Any]) -> str:
        """One seeded ``generate`` reply to ``q`` (greedy at temperature 0)."""
        import torch

        from stylisticbias.judge.engines.hf.generation import decode_response

        enc = self._inputs(q.prompt(), images)
        t = float(self.spec.temperature)
        kw: dict[str, Any] = {"max_new_tokens": int(self.spec.max_tokens), "do_sample": t > 0}
        if t > 0:
            kw["temperature"] = t
        torch.manual_seed(_seed(int(self.spec.seed), item.image_id, q.id))
        out = self.model.generate(**enc, **kw)
        return decode_response(self.processor.tokenizer, out[0, enc["input_ids"].shape[1] :])

    # ---- exact distributions -----------------------------------------------------------------
    def decoding(self, q: Question) -> Any:
        """The exact decoder's settings for question ``q`` (its answers and validator)."""
        from stylisticbias.judge.engines.hf.generation import Decoding

        e = self.spec.exact_settings
        return Decoding(
            temperature=float(e.temperature),
            max_new_tokens=int(e.max_new_tokens),
            prune_threshold=float(e.prune_threshold),
            max_branches_per_suffix=int(e.max_branches_per_suffix),
            decide=answer_decider(q),
            labels=q.choices,
        )

    def distributions(self, images: Sequence[Image.Image], questions: Sequence[Question]) -> list:
        """Exact answer distributions of ``questions`` about the same ``images``: their shared
        prefix runs once; each question's suffix + the prefill is expanded on top of it."""
        from stylisticbias.judge.engines.hf.exact import expand, prefill
        from stylisticbias.judge.engines.hf.prompts import split_prompts
        from stylisticbias.judge.protocol.prompts import render, tokenize_text

        kw = self.spec.chat_template_kwargs
        texts = [q.prompt() for q in questions]
        rendered = [render(self.processor, t, kw, images=len(images)) for t in texts]
        tokens = [tokenize_text(self.processor, r) for r in rendered]
        img: Any = images[0] if len(images) == 1 else list(images)
        prompts = split_prompts(
            self.model, self.processor, img, texts, rendered, kw, text_tokens=tokens
        )
        cache = prefill(self.model, prompts.prefix_inputs)
        tok = self.processor.tokenizer
        pre = list(tok(PREFILL, add_special_tokens=False)["input_ids"])
        return [
            expand(
                self.model,
                tok,
                cache,
                prompts.prefix_ids,
                [prompts.suffixes[k] + pre],
                self.decoding(q),
            )[0]
            for k, q in enumerate(questions)
        ]

    # ---- the annotator -----------------------------------------------------------------------
    def annotate(self, items: Sequence[AnnotationItem]) -> list[dict[str, Any]]:
        """One record per (item, question), in item then question order."""
        import torch

        self.setup()
        out: list[dict[str, Any]] = []
        with torch.inference_mode():
            for item in items:
                one = [_open(item.path)]
                two = [_open(str(item.base_path)), one[0]] if item.base_path else None
                exact: dict[str, Any] = {}
                if self.spec.exact:
                    for n_img, imgs in ((1, one), (2, two)):
                        qs = [q for q in item.questions if q.images == n_img and exact_question(q)]
                        if qs and imgs is not None:
                            exact.update(zip((q.id for q in qs), self.distributions(imgs, qs)))
                for q in item.questions:
                    imgs = one if q.images == 1 else two
                    if imgs is None:
                        raise ValueError(f"{item.image_id}: question {q.id} needs a base image")
                    if q.id in exact:
                        f = exact_fields(exact[q.id])
                        out.append(
                            record(self.name, self.engine, item, q, f["content"], probs=f["probs"])
                        )
                    else:
                        reply = self.generate_reply(item, q, imgs)
                        out.append(record(self.name, self.engine, item, q, reply))
        return out

    def fingerprint(self) -> dict[str, Any]:
        """The spec without the device (it does not change answers)."""
        fp = super().fingerprint()
        fp.pop("device", None)
        return fp

    def close(self) -> None:
        """Drop the model."""
        self.model = self.processor = None


def _open(path: str) -> Image.Image:
    with Image.open(Path(path)) as im:
        return im.convert("RGB")
