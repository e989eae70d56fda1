"""The transformers engine (``engine=hf``): a local checkpoint judged in-process.

It promises the paper's literal procedure (``generate``: seeded sampling, parsed) and its exact
expectation (``exact``: the outcome distribution of every prompt from one shared image prefix,
no sampling; ``sampled``: draws from it), with identical records for any batch size, padding or
prefix-cache implementation. Modules: :mod:`.engine` (the :class:`~.engine.HFJudgeEngine`),
:mod:`.loading` (model and processor), :mod:`.prompts` (one image's prompts as a shared token
prefix + suffixes), :mod:`.generation` (``generate``'s decoding settings), :mod:`.exact` (exact
distributions), :mod:`.prefix_cache` and :mod:`.shared_prefix` (the image-prefix KV cache),
:mod:`.batch_sizing` (``auto`` batch sizes from free memory), :mod:`.processors` (image-only
processors for tiny checkpoints) and :mod:`.compat` (every use of transformers internals).
"""
