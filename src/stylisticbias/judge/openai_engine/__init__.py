"""The ``openai`` judge engine: OpenAI-compatible chat-completions servers and APIs.

Modules: :mod:`.spec` (typed endpoint/transport settings from the model and engine YAML),
:mod:`.requests` (request bodies from the shared prompt builders, one image encode per image),
:mod:`.transport` (async client: concurrency, timeouts, retries, rate limits, refusals),
:mod:`.cache` (durable SQLite response cache), :mod:`.exact` (answer distributions from
log-probabilities), :mod:`.engine` (the :class:`~.engine.OpenAIJudgeEngine`), :mod:`.cost`
(dry-run estimate), :mod:`.loopback` (a vLLM-shaped local server for tests and benchmarks) and
``python -m stylisticbias.judge.openai_engine`` (estimate, cache stats and prune).
"""
