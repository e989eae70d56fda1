"""Tiny random-weight checkpoints of the paper's VLM architectures, built offline.

Each builder writes a complete Hugging Face checkpoint directory (model weights, config,
generation config, tokenizer, image processor, processor with a chat template) that loads
through exactly the same ``AutoModelForImageTextToText`` / ``AutoProcessor.from_pretrained``
path as the real models. Used by the tests, the smoke experiment and the CPU benchmark. The
judge never builds them: ``make tiny`` (``python -m stylisticbias_dev.tiny --all``) builds the
checkpoint of every ``conf/model/*.yaml`` with a ``local_build`` key into its ``hub_id``; the tests
build theirs through fixtures (:func:`ensure_model`).

Tokenizer: a word-level vocabulary of a few dozen pieces (letters, brackets, punctuation, a few
hedge words, spaces as tokens) plus the architecture's special and image tokens; prompt words
outside it become ``<unk>``. It decodes losslessly (``Fuse``), so "(a)" is three tokens.

Weights: seeded random init, then a *bigram answer grammar* is planted so random weights answer
like a chat model often does: the generation prompt's last token prefers ``(``, ``(`` prefers
``a``/``b``, a letter prefers ``)``, ``)`` prefers EOS, with small weights on hedges
("neither", "or (b)", "I cannot") and on bare letters. Each grammar token gets its own
residual-stream direction in the input embedding and the LM head reads those directions with
the grammar's logits; the random transformer layers add image- and prompt-dependent noise, so
the a/b split varies across images and prompts. ``generation_config.suppress_tokens`` forbids
the image/pad/unk tokens (generate applies it, and so must the exact engine).

Builders: one module per architecture in :mod:`stylisticbias_dev.tiny_archs` (LLaVA-NeXT,
Pixtral, Gemma-3, Qwen3-VL, InternVL, Gemma-4), using the shared helpers here; :data:`BUILDERS`
imports them lazily. CLI: ``python -m stylisticbias_dev.tiny <arch> <out_dir>`` (arch: see
:data:`ARCHITECTURES`), ``python -m stylisticbias_dev.tiny --model tiny-llava-next`` or ``--all``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)

#: Characters every tiny tokenizer knows besides its special tokens; text is split into single
#: characters, so every prompt is represented exactly (no ``<unk>``) and "(a)" is three tokens.
CHARS: tuple[str, ...] = tuple(
    " \n()[]{}<>.,:;?!-*_'\"/"
    + "abcdefghijklmnopqrstuvwxyz"
    + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    + "0123456789"
)

# Bigram grammar over response pieces: prev -> {next: logit}; everything else gets _OTHER.
_START = "<start>"  # stands for the last token of the generation prompt
_EOS = "<eos>"
_OTHER = -8.0
_GRAMMAR: dict[str, dict[str, float]] = {
    _START: {"(": 3.0, "a": 0.5, "b": 0.5, "A": 0.0, "I": -0.5, "N": -0.5, _EOS: -1.0},
    "(": {"a": 2.0, "b": 2.0, "A": -0.5, "B": -0.5, ")": -1.0},
    "a": {")": 3.0, _EOS: 1.0, ".": 0.5, " ": 0.0},
    "b": {")": 3.0, _EOS: 1.0, ".": 0.5, " ": 0.0},
    "A": {")": 2.5, _EOS: 1.0, " ": 0.5},
    "B": {")": 2.5, _EOS: 1.0, " ": 0.5},
    ")": {_EOS: 3.5, ".": 1.0, " ": 0.5},
    ".": {_EOS: 4.0},
    " ": {"o": 1.0, "(": 1.0, "p": 0.0, _EOS: 0.0},
    "o": {"r": 3.0},
    "r": {" ": 3.0},
    "I": {" ": 2.0, "'": 1.0},
    "N": {"o": 2.0, "e": 1.0},
    "p": {"e": 2.0},
}


def benchmark_words() -> list[str]:
    """Whole words of the Fig. 12 prompt and the scenario poles (read from conf/benchmark).

    They become single tokens, so prompt suffixes are word-level like a real tokenizer's
    (~40 tokens) instead of one token per character. Empty if the config is not found.
    """
    import re

    from stylisticbias.benchmark import PAPER_PROTOCOL, load_benchmark
    from stylisticbias.config import conf_dir

    path = conf_dir() / "benchmark" / f"{PAPER_PROTOCOL}.yaml"
    if not path.exists():
        return []
    bench = load_benchmark(path)
    text = " ".join(
        [bench.prompts["forced_choice"]] + [f"{s.positive} {s.negative}" for s in bench.scenarios]
    )
    return sorted({w for w in re.findall(r"\w+", text) if len(w) > 1})


def _tokenizer(
    specials: Sequence[str],
    *,
    bos: str | None,
    eos: str,
    pad: str,
    unk: str = "<unk>",
    extra: dict[str, str] | None = None,
    chat_template: str | None = None,
) -> Any:
    """A word-level fast tokenizer whose vocab is ``specials`` + :data:`CHARS`."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    for t in [pad, unk, *([bos] if bos else []), eos, *specials, *CHARS, *benchmark_words()]:
        vocab.setdefault(t, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex(r"\w+|[\s\S]"), behavior="isolated")
    tk.decoder = decoders.Fuse()
    special = [t for t in [pad, unk, bos, eos, *specials] if t]
    kwargs: dict[str, Any] = {
        "tokenizer_object": tk,
        "pad_token": pad,
        "unk_token": unk,
        "eos_token": eos,
    }
    if bos:
        kwargs["bos_token"] = bos
    if extra:
        kwargs["extra_special_tokens"] = extra
    tok = PreTrainedTokenizerFast(**kwargs)
    tok.add_special_tokens(
        {"additional_special_tokens": special}, replace_extra_special_tokens=False
    )
    if chat_template:
        tok.chat_template = chat_template
    return tok


def plant_grammar(
    model: Any,
    tokenizer: Any,
    start_token: str,
    *,
    sharpness: float = 2.0,
    preference: float = 8.0,
    aliases: Mapping[str, str] | None = None,
    grammar: Mapping[str, Mapping[str, float]] | None = None,
) -> None:
    """Plant the bigram answer grammar into a randomly initialised model (in place).

    Grammar piece ``i`` writes ``e_i`` into the input embedding (on top of a damped random init)
    and the LM head reads direction ``i`` with ``sharpness`` x the grammar's logits; the final
    RMSNorm turns the residual stream into a unit-scale read-out. One more direction, written
    only by the random layers (so it depends on the image and the prompt), pushes ``a`` up and
    ``b`` down with weight ``preference``: that is where the a/b split comes from.
    ``aliases``: grammar piece -> the vocabulary's spelling of it (a real BPE vocabulary spells
    a space ``Ġ`` or ``▁``). ``grammar``: another bigram grammar (same shape as the default;
    ``"<start>"`` and ``"<eos>"`` stand for ``start_token`` and the EOS token).
    """
    import torch

    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    if emb.data_ptr() == head.data_ptr():
        raise StylisticBiasError("tiny model: input and output embeddings are tied; untie them")
    hidden = emb.shape[1]
    vocab = tokenizer.get_vocab()
    names = {**dict(aliases or {}), _START: start_token, _EOS: tokenizer.eos_token}
    rules = _GRAMMAR if grammar is None else grammar
    pieces = [p for p in rules if names.get(p, p) in vocab]
    if len(pieces) + 1 > hidden:
        raise StylisticBiasError(f"tiny model: hidden size {hidden} < {len(pieces) + 1} directions")
    pref = len(pieces)
    sqrt_h = hidden**0.5
    with torch.no_grad():
        head.zero_()
        emb.mul_(0.1)
        emb[:, pref] = 0.0
        for i, prev in enumerate(pieces):
            emb[vocab[names.get(prev, prev)], i] += 1.0
            row = torch.full((head.shape[0],), _OTHER, device=head.device)
            for nxt, logit in rules[prev].items():
                tid = vocab.get(names.get(nxt, nxt))
                if tid is not None:
                    row[tid] = logit
            head[:, i] = (row * sharpness / sqrt_h).to(head.dtype)
        head[vocab["a"], pref] = preference / sqrt_h
        head[vocab["b"], pref] = -preference / sqrt_h


# ---------------------------------------------------------------------------------------------
# shared builder helpers and the architecture registry
# ---------------------------------------------------------------------------------------------


def _text_cfg(vocab_size: int, **over: Any) -> dict[str, Any]:
    base = {
        "vocab_size": vocab_size,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 4096,
        "initializer_range": 0.03,
        "tie_word_embeddings": False,
    }
    base.update(over)
    return base


def prepare(
    model: Any,
    processor: Any,
    start_token: str,
    *,
    sharpness: float = 2.0,
    aliases: Mapping[str, str] | None = None,
) -> None:
    """Plant the answer grammar and set a generation config that suppresses the special tokens.

    In place; shared by the saved tiny checkpoints and the in-memory full-size models of
    :mod:`stylisticbias_dev.full_size`.
    """
    from transformers import GenerationConfig

    tok = processor.tokenizer
    plant_grammar(model, tok, start_token, sharpness=sharpness, aliases=aliases)
    image_ids = [
        i
        for t, i in tok.get_vocab().items()
        if t in tok.all_special_tokens and t not in (tok.eos_token,)
    ]
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        suppress_tokens=sorted(image_ids),
    )


def _finish(
    model: Any, processor: Any, start_token: str, out: Path, seed: int, sharpness: float = 2.0
) -> Path:
    """Plant the grammar, set the generation config, save model + processor."""
    prepare(model, processor, start_token, sharpness=sharpness)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    (out / "TINY_MODEL.json").write_text(
        json.dumps({"seed": seed, "note": "random weights + planted grammar; tests only"}, indent=1)
    )
    return out


def _module_builder(module: str) -> Callable[..., Path]:
    """The ``build`` function of ``stylisticbias_dev.tiny_archs.<module>`` (imported lazily)."""

    def build(out: str | Path, seed: int = 0, **kwargs: Any) -> Path:
        import importlib

        mod = importlib.import_module(f"stylisticbias_dev.tiny_archs.{module}")
        return mod.build(Path(out), seed, **kwargs)

    build.__name__ = f"build_{module}"
    return build


#: LLaVA-NeXT (anyres CLIP + Mistral): 336 image tokens for a square image.
build_llava_next = _module_builder("llava_next")
#: Pixtral (Pixtral tower + Mistral): 272 image tokens; its processor needs torchvision.
build_pixtral = _module_builder("pixtral")
#: Gemma-3 (SigLIP pooled to 256 tokens, bidirectional image attention).
build_gemma3 = _module_builder("gemma3")

BUILDERS: dict[str, Callable[..., Path]] = {
    "llava_next": build_llava_next,
    "pixtral": build_pixtral,
    "gemma3": build_gemma3,
    "qwen3_vl": _module_builder("qwen3_vl"),
    "internvl": _module_builder("internvl"),
    "gemma4": _module_builder("gemma4"),
}
#: Architecture names accepted by ``local_build:`` and the CLI.
ARCHITECTURES: tuple[str, ...] = tuple(BUILDERS)
#: Extra packages an architecture's processor needs (transformers' Pixtral processor: torchvision).
REQUIRES: dict[str, str] = {"pixtral": "torchvision"}


def missing_requirement(arch: str) -> str | None:
    """The missing package ``arch`` needs in this environment, or None."""
    import importlib.util

    pkg = REQUIRES.get(arch)
    return pkg if pkg and importlib.util.find_spec(pkg) is None else None


def build(arch: str, out: str | Path, seed: int = 0) -> Path:
    """Build the tiny checkpoint of ``arch`` into ``out`` (overwrites files there)."""
    if arch not in BUILDERS:
        raise StylisticBiasError(
            f"unknown tiny architecture {arch!r}; valid: {', '.join(ARCHITECTURES)}"
        )
    path = BUILDERS[arch](Path(out), seed=seed)
    log.info("built tiny %s checkpoint in %s", arch, path)
    return path


#: The file in a built checkpoint naming the builder it came from (:func:`builder_hash`).
BUILDER_STAMP = "BUILDER_HASH"


def builder_hash(arch: str, seed: int = 0) -> str:
    """A key of everything a tiny checkpoint's bytes depend on: the builder sources (this
    module and every :mod:`stylisticbias_dev.tiny_archs` module), the transformers and torch
    versions, the architecture and the seed. A checkpoint built by other code is stale."""
    import hashlib

    import torch
    import transformers

    here = Path(__file__).resolve().parent
    h = hashlib.sha256(f"{arch}\0{seed}\0{transformers.__version__}\0{torch.__version__}".encode())
    for f in [Path(__file__).resolve(), *sorted((here / "tiny_archs").glob("*.py"))]:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def tiny_cache_dir() -> Path:
    """Where built tiny checkpoints are kept across checkouts, one folder per builder hash:
    ``$STYLISTICBIAS_TINY_CACHE``, else ``$XDG_CACHE_HOME/stylisticbias/tiny`` (default
    ``~/.cache/stylisticbias/tiny``)."""
    env = os.environ.get("STYLISTICBIAS_TINY_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "stylisticbias" / "tiny"


def _is_current(p: Path, key: str) -> bool:
    stamp = p / BUILDER_STAMP
    return (p / "config.json").exists() and stamp.exists() and stamp.read_text() == key


def _build_into(p: Path, make: Callable[[Path], None], key: str) -> None:
    """Fill ``p`` through ``make(scratch)`` atomically (scratch folder beside it, then rename),
    stamped with ``key``; under a file lock, so concurrent callers build it once."""
    import shutil
    import tempfile

    from filelock import FileLock

    p.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(p.parent / f".{p.name}.lock")):
        if _is_current(p, key):  # built by another process while we waited
            return
        tmp = Path(tempfile.mkdtemp(prefix=f".{p.name}-build-", dir=p.parent))
        try:
            make(tmp)
            (tmp / BUILDER_STAMP).write_text(key)
            shutil.rmtree(p, ignore_errors=True)
            os.replace(tmp, p)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def ensure_built(arch: str, out: str | Path, seed: int = 0) -> Path:
    """``out`` holding the tiny checkpoint of ``arch`` built by the current builder code.

    Built once per :func:`builder_hash` into :func:`tiny_cache_dir` and copied into ``out``
    (a few MB), so fresh clones, worktrees and test sessions share one build; a checkpoint in
    ``out`` from other builder code (or none) is replaced. Safe for concurrent callers
    (pytest-xdist workers, parallel sessions): each folder is built into a scratch folder beside
    it under a file lock and renamed into place; the others wait and find it built.
    """
    import shutil

    p = Path(out)
    key = builder_hash(arch, seed)
    if _is_current(p, key):
        return p
    cached = tiny_cache_dir() / f"{arch}-seed{seed}-{key}"
    try:
        if not _is_current(cached, key):
            _build_into(cached, lambda tmp: build(arch, tmp, seed), key)
    except OSError as e:  # an unwritable cache: build straight into out
        log.warning("tiny checkpoint cache %s unusable (%s); building into %s", cached, e, p)
        _build_into(p, lambda tmp: build(arch, tmp, seed), key)
        return p
    _build_into(p, lambda tmp: shutil.copytree(cached, tmp, dirs_exist_ok=True), key)
    return p


def tiny_models() -> list[str]:
    """The ``conf/model/*.yaml`` options with a ``local_build`` key (tiny test checkpoints)."""
    from omegaconf import OmegaConf

    from stylisticbias.config import conf_dir

    return sorted(
        p.stem
        for p in (conf_dir() / "model").glob("*.yaml")
        if OmegaConf.load(p).get("local_build")
    )


def ensure_model(name: str) -> Path:
    """Build the checkpoint of ``conf/model/<name>.yaml`` at its ``hub_id`` unless it exists.

    ``local_build`` names the architecture, ``seed`` (default 0) the weights; a relative
    ``hub_id`` is under the project root. Returns the checkpoint directory.
    """
    from stylisticbias.config import load_group_option, project_root

    cfg = load_group_option("model", name)
    arch = cfg.get("local_build")
    if not arch:
        raise StylisticBiasError(
            f"conf/model/{name}.yaml: no key 'local_build'; tiny models: {', '.join(tiny_models())}"
        )
    path = Path(str(cfg["hub_id"]))
    if not path.is_absolute():
        path = project_root() / path
    return ensure_built(str(arch), path, seed=int(cfg.get("seed", 0) or 0))


def load_model_arch(name: str) -> str:
    """The ``local_build`` architecture of ``conf/model/<name>.yaml`` (empty if none)."""
    from stylisticbias.config import load_group_option

    return str(load_group_option("model", name).get("local_build") or "")


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(prog="python -m stylisticbias_dev.tiny", description=__doc__)
    ap.add_argument("arch", nargs="?", help=f"one of {', '.join(ARCHITECTURES)}")
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", action="append", default=[], help="conf/model/<MODEL>.yaml to build")
    ap.add_argument("--all", action="store_true", help="every conf/model/*.yaml with local_build")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if args.arch or args.out_dir:
            if not (args.arch and args.out_dir):
                ap.error("give both ARCH and OUT_DIR, or --model/--all")
            build(args.arch, args.out_dir, args.seed)
        names = tiny_models() if args.all else args.model
        if not names and not args.arch:
            ap.error("give ARCH OUT_DIR, --model NAME or --all")
        for name in names:
            arch = load_model_arch(name)
            if (missing := missing_requirement(arch)) is not None:
                log.warning("skipped %s: its processor needs %s (not installed)", name, missing)
                continue
            log.info("%s: %s", name, ensure_model(name))
    except StylisticBiasError as exc:
        log.error("error: %s", exc)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
