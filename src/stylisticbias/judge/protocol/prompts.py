"""Forced-choice prompts (paper Fig. 12) as chat messages, rendered by each model's own template.

One *prompt* per (scenario, ordering); the user turn holds the image first, then the text, and
no system prompt (the paper states none). Ordering 1 is Fig. 12 word for word
(``Benchmark.forced_choice_prompt``). A task prompt may carry a system message (VIGNETTE's
released one): :func:`chat_messages` then opens with a ``system`` turn, and
:func:`system_turn` says whether a processor's chat template renders one (else the engine
prepends it to the text, :func:`prepend_system`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stylisticbias.benchmark import Benchmark, Ordering, Scenario
from stylisticbias.errors import StylisticBiasError


@dataclass(frozen=True)
class PromptSpec:
    """One (scenario, ordering) prompt of an image."""

    scenario: Scenario
    ordering: Ordering
    text: str

    @property
    def key(self) -> tuple[int, int]:
        """``(scenario_id, ordering)``."""
        return (self.scenario.id, self.ordering.id)


def prompt_specs(
    benchmark: Benchmark,
    orderings: Iterable[int],
    scenario_ids: Iterable[int] | str | None = None,
) -> list[PromptSpec]:
    """All (scenario x ordering) prompts in a fixed order (scenario-major).

    ``scenario_ids``: None or ``"all"`` for every scenario, else a subset of Table 1 ids.
    """
    if scenario_ids is None or scenario_ids == "all":
        scen = list(benchmark.scenarios)
    elif isinstance(scenario_ids, str):
        raise StylisticBiasError(f"judge.scenarios: {scenario_ids!r}; valid: all or a list of ids")
    else:
        scen = [benchmark.scenario(int(s)) for s in scenario_ids]
    ords = [benchmark.ordering(int(o)) for o in orderings]
    return [PromptSpec(s, o, benchmark.forced_choice_prompt(s, o)) for s in scen for o in ords]


def chat_messages(text: str, image: Any = None, system: str = "") -> list[dict[str, Any]]:
    """A one-turn conversation: the image(s) first, then the prompt text.

    ``image`` (a PIL image) is attached for ``apply_chat_template(tokenize=True)``; leave it None
    to render the text only. A list or tuple gives one image part per element, in order (a
    pairwise prompt's slot 1, slot 2; ``[]`` for a text-only prompt; ``[None, None]`` renders
    two image placeholders). ``system``: a system message, sent as a ``system`` turn before the
    user turn (none when empty).
    """
    images = list(image) if isinstance(image, list | tuple) else [image]
    parts: list[dict[str, Any]] = []
    for im in images:
        img: dict[str, Any] = {"type": "image"}
        if im is not None:
            img["image"] = im
        parts.append(img)
    user = {"role": "user", "content": [*parts, {"type": "text", "text": text}]}
    if not system:
        return [user]
    return [{"role": "system", "content": [{"type": "text", "text": system}]}, user]


def render(
    processor: Any,
    text: str,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    images: int = 1,
    system: str = "",
) -> str:
    """The prompt string the model's own chat template produces (generation prompt added),
    with ``images`` image placeholders before the text (and the ``system`` turn, if any)."""
    return processor.apply_chat_template(
        chat_messages(text, None if images == 1 else [None] * images, system),
        add_generation_prompt=True,
        tokenize=False,
        **dict(chat_template_kwargs or {}),
    )


#: the probe :func:`system_turn` renders as a system message
_PROBE = "SYSTEM-TURN-PROBE"


def system_turn(processor: Any, chat_template_kwargs: Mapping[str, Any] | None = None) -> bool:
    """Whether ``processor``'s chat template renders a system turn: a probe system message
    renders without error and its text is in the prompt (a template that rejects the role, or
    silently drops it, has none)."""
    try:
        return _PROBE in render(processor, "x", chat_template_kwargs, images=1, system=_PROBE)
    except Exception:  # jinja's TemplateError, a template's raise_exception: no system role
        return False


def prepend_system(text: str, system: str) -> str:
    """The user text with the system message on its own line before it (for a chat format
    without a system turn)."""
    return f"{system}\n{text}" if system else text


def render_all(
    processor: Any,
    specs: Sequence[PromptSpec],
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> list[str]:
    """:func:`render` for every spec."""
    return [render(processor, s.text, chat_template_kwargs) for s in specs]


def encode(
    processor: Any,
    text: str,
    image: Any,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    system: str = "",
) -> Any:
    """Model inputs (``BatchEncoding`` of tensors, batch 1) for one prompt with its image (and
    its ``system`` turn, if any)."""
    return processor.apply_chat_template(
        chat_messages(text, image, system),
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        return_tensors="pt",
        **dict(chat_template_kwargs or {}),
    )


def tokenize_text(processor: Any, rendered: str) -> list[int]:
    """Token ids of a rendered prompt *without* expanding the image placeholder.

    Mirrors ``ProcessorMixin.apply_chat_template``: no extra special tokens when the template
    already starts with BOS.
    """
    tok = processor.tokenizer
    add = not (tok.bos_token is not None and rendered.startswith(tok.bos_token))
    return list(tok(rendered, add_special_tokens=add)["input_ids"])


def common_prefix_len(seqs: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of token sequences."""
    if not seqs:
        return 0
    n = min(len(s) for s in seqs)
    first = seqs[0]
    for i in range(n):
        t = first[i]
        if any(s[i] != t for s in seqs[1:]):
            return i
    return n
