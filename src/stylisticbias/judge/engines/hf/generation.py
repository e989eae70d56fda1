"""``generate``'s decoding settings, as the exact decoder must reproduce them.

:class:`Decoding` (temperature, new tokens, pruning and batch limits), the merged generation
config and EOS ids ``generate`` prepares, its logits processors (all through :mod:`.compat`),
response decoding, and whether suffixes may be left-padded into one batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stylisticbias.benchmark import ParserRules
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.hf import compat as hf_compat


@dataclass
class Decoding:
    """Sampling settings shared by ``generate`` and the exact expansion."""

    temperature: float
    max_new_tokens: int
    prune_threshold: float = 1e-4
    branch_batch_size: int = 256
    # live branches kept per suffix (its most probable ones); the overflow counts as undecided.
    # Per suffix, so a suffix's distribution never depends on which suffixes share its batch.
    max_branches_per_suffix: int = 64
    # the protocol's parser rules (Benchmark.parser); None: the paper protocol's
    parser: ParserRules | None = None
    # another reader of a response in place of the letter parser: ``decide(text, finished)``
    # returns one of ``labels``, ``"invalid"`` or (unfinished text only) None, as
    # ``decide_prefix`` does; ``labels`` are the outcomes it can return (a question's answers)
    decide: Callable[..., str | None] | None = None
    labels: tuple[str, ...] | None = None

    def generate_kwargs(self) -> dict[str, Any]:
        """The kwargs of the literal ``model.generate`` call."""
        return {
            "do_sample": True,
            "temperature": self.temperature,
            "max_new_tokens": self.max_new_tokens,
        }


def generation_setup(model: Any, decoding: Decoding) -> tuple[Any, set[int]]:
    """(merged GenerationConfig with special-token tensors, EOS ids) as ``generate`` prepares."""
    gen_cfg = hf_compat.generation_config(model, decoding.generate_kwargs())
    if getattr(gen_cfg, "stop_strings", None):
        raise StylisticBiasError("exact decoding does not support generation_config.stop_strings")
    hf_compat.prepare_special_tokens(model, gen_cfg)
    return gen_cfg, hf_compat.eos_token_ids(gen_cfg)


def logits_processors(model: Any, gen_cfg: Any, prompt_ids: Any) -> Any:
    """``generate``'s ``LogitsProcessorList`` for a prompt of this length."""
    return hf_compat.logits_processor_list(model, gen_cfg, prompt_ids)


def decode_response(tokenizer: Any, ids: Sequence[int]) -> str:
    """Decode generated token ids exactly as the generate path does."""
    return tokenizer.decode(list(ids), skip_special_tokens=True)


#: Logits processors that read the *order* of the prompt tokens (n-grams): with one of them
#: configured, suffixes are grouped by length instead of left-padded (see :func:`expand`).
ORDER_SENSITIVE_PROCESSORS = frozenset(
    {"NoRepeatNGramLogitsProcessor", "EncoderNoRepeatNGramLogitsProcessor"}
)


def padding_allowed(model: Any, decoding: Decoding, gen_setup: Any = None) -> bool:
    """Whether suffixes of different lengths may share a left-padded batch.

    The padded prompt that ``generate``'s logits processors see holds the row's first suffix
    token in place of each pad: every processor that only reads the prompt's token *set*
    (repetition penalty) or its length (min-new-tokens, begin suppression: equal for all rows)
    sees what it sees unpadded; n-gram processors would not, so they switch padding off.
    """
    import torch

    gen_cfg, _ = gen_setup or generation_setup(model, decoding)
    dummy = torch.zeros((1, 2), dtype=torch.long, device=model.device)
    names = {type(p).__name__ for p in logits_processors(model, gen_cfg, dummy)}
    return not (names & ORDER_SENSITIVE_PROCESSORS)
