"""The ``openai`` judge engine: OpenAI-compatible chat-completions servers and APIs.

Modules: :mod:`.spec` (typed endpoint/transport settings from the model and engine YAML),
:mod:`.requests` (request bodies from the shared prompt builders, one image encode per image),
:mod:`.transport` (async client: concurrency, timeouts, retries, rate limits, refusals),
:mod:`.cache` (durable SQLite response cache), :mod:`.batch` (provider batch jobs filling the
cache, resumable), :mod:`.exact` (answer distributions from log-probabilities), :mod:`.engine`
(the :class:`~.engine.OpenAIJudgeEngine`), :mod:`.cost` (dry-run estimate, online and batch
prices), ``python -m stylisticbias.judge.openai_cli`` (estimate, cache stats and prune) and
``python -m stylisticbias.judge.batch`` (offline batch files: export, import). The tests'
vLLM-shaped local server is ``stylisticbias_dev.openai_loopback``; its Batch-API sibling
``stylisticbias_dev.openai_batch_loopback``.

It promises the ``hf`` engine's three decodings over HTTP, with the same records: every
response is cached on arrival (a rerun sends nothing; a killed run resumes to identical
records), refusals are recorded as invalid and never re-asked, and the transport is polite
(bounded concurrency, retries with backoff, rate limits).
"""
