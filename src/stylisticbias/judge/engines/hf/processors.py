"""Image-only processors for tiny checkpoints whose transformers processor needs a video processor.

transformers 5's ``Qwen3VLProcessor`` and ``InternVLProcessor`` (and ``Gemma4Processor``) take a
``video_processor`` argument, and every video processor is built on the torchvision backend,
which this project does not install. The judge never passes videos, so the tiny checkpoints save
these subclasses instead: the same class with the video processor dropped from its attributes
(``__call__``, chat-template rendering and image-token expansion are inherited unchanged).

:func:`register` makes them loadable through ``AutoProcessor.from_pretrained`` (the class name in
``processor_config.json`` is looked up among registered processors); they are registered under
private config classes, so no real architecture's processor mapping changes.
"""

from __future__ import annotations

from typing import Any

from transformers import (
    AutoProcessor,
    Gemma4Processor,
    InternVLProcessor,
    PretrainedConfig,
    ProcessorMixin,
    Qwen3VLProcessor,
)


class TinyQwen3VLProcessor(Qwen3VLProcessor):
    """``Qwen3VLProcessor`` without a video processor (images and text only)."""

    def __init__(
        self,
        image_processor: Any = None,
        tokenizer: Any = None,
        chat_template: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


class TinyInternVLProcessor(InternVLProcessor):
    """``InternVLProcessor`` without a video processor (images and text only)."""

    def __init__(
        self,
        image_processor: Any = None,
        tokenizer: Any = None,
        image_seq_length: int = 256,
        chat_template: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            image_processor,
            tokenizer,
            None,
            image_seq_length=image_seq_length,
            chat_template=chat_template,
            **kwargs,
        )


class TinyGemma4Processor(Gemma4Processor):
    """``Gemma4Processor`` without video processor and audio feature extractor (images, text).

    ``Gemma4Processor.__init__`` passes both to ``ProcessorMixin`` by keyword, so this sets the
    same attributes itself (the audio ones from the tokenizer, as the parent does).
    """

    def __init__(
        self,
        image_processor: Any = None,
        tokenizer: Any = None,
        chat_template: Any = None,
        image_seq_length: int = 280,
        audio_seq_length: int = 750,
        audio_ms_per_token: int = 40,
        **kwargs: Any,
    ) -> None:
        self.image_seq_length = image_seq_length
        self.image_token_id = tokenizer.image_token_id
        self.boi_token = tokenizer.boi_token
        self.eoi_token = tokenizer.eoi_token
        self.image_token = tokenizer.image_token
        tokenizer.add_special_tokens({"additional_special_tokens": ["<|video|>"]})
        self.video_token = "<|video|>"
        self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
        self.audio_seq_length = audio_seq_length
        self.audio_ms_per_token = audio_ms_per_token
        for attr in ("audio_token_id", "audio_token", "boa_token", "eoa_token"):
            setattr(self, attr, getattr(tokenizer, attr, None))
        ProcessorMixin.__init__(
            self,
            image_processor=image_processor,
            tokenizer=tokenizer,
            chat_template=chat_template,
            **kwargs,
        )


PROCESSORS: tuple[type, ...] = (TinyQwen3VLProcessor, TinyInternVLProcessor, TinyGemma4Processor)
_registered = False


def register() -> None:
    """Register :data:`PROCESSORS` with ``AutoProcessor`` (idempotent)."""
    global _registered
    if _registered:
        return
    for cls in PROCESSORS:
        name = cls.__name__
        config = type(f"{name}Config", (PretrainedConfig,), {"model_type": f"sb_{name.lower()}"})
        AutoProcessor.register(config, cls)
    _registered = True
