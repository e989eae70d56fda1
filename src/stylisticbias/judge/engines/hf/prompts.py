"""One image's prompts as a shared token prefix (chat preamble, image, start of Fig. 12) + suffixes.

:func:`split_prompts` encodes the first prompt with the image once and expresses every prompt as
that prefix plus its own suffix tokens; the exact decoder (:mod:`.exact`) runs the prefix once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.prompts import common_prefix_len, encode, tokenize_text


@dataclass
class ImagePrompts:
    """The prompts of one image as one shared prefix and per-prompt suffix tokens."""

    prefix_inputs: dict[str, Any]  # batch-1 model inputs of the prefix (ids, mask, pixels, ...)
    prefix_ids: list[int]
    suffixes: list[list[int]]
    image_tokens: int

    def full_ids(self, k: int) -> list[int]:
        """Token ids of prompt ``k`` (prefix + suffix), identical to the processor's encoding."""
        return self.prefix_ids + self.suffixes[k]


def image_token_id(model: Any, processor: Any) -> int | None:
    """The id of the image placeholder token (after expansion) for this model."""
    for obj, attr in (
        (model.config, "image_token_id"),
        (model.config, "image_token_index"),
        (processor, "image_token_id"),
    ):
        v = getattr(obj, attr, None)
        if isinstance(v, int):
            return v
    return None


def split_prompts(
    model: Any,
    processor: Any,
    image: Any,
    texts: Sequence[str],
    rendered: Sequence[str],
    chat_template_kwargs: Mapping[str, Any] | None = None,
    text_tokens: Sequence[list[int]] | None = None,
    system: str = "",
) -> ImagePrompts:
    """Encode prompt 0 with the image once; express every prompt as shared prefix + suffix.

    The split point is the longest common prefix of the *un-expanded* token sequences of all
    rendered prompts (capped so every prompt keeps >= 1 suffix token). The image placeholder
    lies before it, so the expanded prefix is taken from the processor's encoding of prompt 0
    and each suffix is that prompt's own tokens after the split point. ``text_tokens``: the
    tokenizer's tokens of ``rendered`` if already known (they do not depend on the image).
    ``system``: the system turn every prompt was rendered with (empty: none).
    """
    toks = (
        [list(t) for t in text_tokens]
        if text_tokens is not None
        else [tokenize_text(processor, r) for r in rendered]
    )
    cut = min(common_prefix_len(toks), min(len(t) for t in toks) - 1)
    enc = encode(processor, texts[0], image, chat_template_kwargs, system)
    ids = enc["input_ids"][0].tolist()
    tail = len(toks[0]) - cut
    if ids[len(ids) - tail :] != toks[0][cut:]:
        raise StylisticBiasError(
            "prompt split: the processor's encoding does not end with the tokenizer's tokens of "
            "the prompt text (the image placeholder must come before the scenario text)"
        )
    p = len(ids) - tail
    seq = enc["input_ids"].shape[1]
    prefix_inputs: dict[str, Any] = {}
    for key, val in enc.items():
        if hasattr(val, "shape") and val.ndim >= 2 and val.shape[0] == 1 and val.shape[1] == seq:
            prefix_inputs[key] = val[:, :p]
        else:
            prefix_inputs[key] = val
    img_id = image_token_id(model, processor)
    suffixes = [t[cut:] for t in toks]
    if img_id is not None and any(img_id in s for s in suffixes):
        raise StylisticBiasError("prompt split: an image token falls in a prompt suffix")
    n_img = ids[:p].count(img_id) if img_id is not None else 0
    return ImagePrompts(prefix_inputs, ids[:p], suffixes, n_img)
