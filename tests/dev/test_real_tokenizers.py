"""The real Qwen / Mistral tokenizers rebuilt from PyPI-shipped vocabularies (bench extra)."""

from __future__ import annotations

import importlib.util

import pytest

from stylisticbias_dev import real_tokenizers as rt


def test_mistral_tokenizer_reproduces_published_ids() -> None:
    pytest.importorskip("sentencepiece")
    tok = rt.mistral_tokenizer()
    assert len(tok) == 32002 and tok.convert_tokens_to_ids("<image>") == 32000
    # "(a)" is three pieces with a leading-space "(" as in Mistral-7B
    assert tok.convert_ids_to_tokens(tok("x (a)", add_special_tokens=False)["input_ids"])[-3:] == [
        "▁(",
        "a",
        ")",
    ]
    assert "sha256" in rt.source("mistral")


@pytest.mark.skipif(importlib.util.find_spec("dashscope") is None, reason="bench extra")
def test_qwen_tokenizer_reproduces_published_ids() -> None:
    tok = rt.qwen_tokenizer()
    ids = tok("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>hi<|im_end|>\n")
    assert ids["input_ids"] == [151644, 872, 198, 151652, 151655, 151653, 6023, 151645, 198]
    assert tok.decode(tok("Answer with only (a) or (b).")["input_ids"]) == (
        "Answer with only (a) or (b)."
    )


def test_unknown_vocabulary_is_a_clear_error() -> None:
    with pytest.raises(rt.StylisticBiasError, match="valid: qwen, mistral"):
        rt.vocabulary_file("llama")
