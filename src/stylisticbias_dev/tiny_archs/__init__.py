"""Tiny random-weight builders of further architectures (registered in :mod:`..tiny`).

One module per architecture; each exposes ``build(out, seed=0) -> Path`` and reuses the shared
tokenizer, config and grammar helpers of :mod:`stylisticbias_dev.tiny`.
"""
