"""Judging: the judge stage's orchestration, the engines and the protocol parts they share.

- :mod:`.protocol` -- what every engine shares: the judge section's settings, forced-choice
  prompts, response parsing, the outcome of one judgment cell, exact answer distributions.
  It imports no engine.
- :mod:`.engines` -- the engine interface (:mod:`.engines.base`), the factory that builds the
  class a model's ``_target_`` names (:mod:`.engines.factory`) and one subpackage per engine:
  :mod:`.engines.hf` (transformers), :mod:`.engines.simulated` (planted effects, no pixels),
  :mod:`.engines.openai` (OpenAI-compatible servers). An engine imports no other engine.
- this package's modules -- the stage: :mod:`.run` (judge every image resumably and
  consolidate), :mod:`.datamodule` and :mod:`.lightning_runner` (batched prediction over
  ranks), :mod:`.writer` (atomic judgment shards) and :mod:`.records` (finished records across
  configurations).
"""
