"""Typed settings of the ``openai`` engine: endpoint (model YAML) and transport (engine YAML).

A model file for an OpenAI-compatible server names where to send requests and what the server
can do; it never holds a key, only the *name* of the environment variable that does::

    name: gemma-3-12b-vllm
    engine: openai
    endpoint:
      backend: vllm
      base_url: http://gpu-node:8000/v1
      served_model: google/gemma-3-12b-it
      api_key_env: VLLM_API_KEY        # optional; the key is read from this variable at run time
      extra_body: {}                   # merged into every request body
      capabilities: {logprobs: true, assistant_prefill: continue_final_message}
    prices: {input_per_million: 0.0, output_per_million: 0.0}

:func:`endpoint_spec` and :func:`transport_spec` turn the dicts into frozen specs with one-line
errors naming the file and key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from stylisticbias.errors import StylisticBiasError

BACKENDS = (
    "vllm",
    "sglang",
    "ollama",
    "azure",
    "vertex",
    "openai",
    "litellm",
    "openrouter",
    "transformers-serve",
    "other",
)
PREFILL_MODES = ("continue_final_message", "none")
BATCH_RETRY = ("batch", "online")
LOGPROBS_MODES = ("raw", "processed")
SAMPLING_MODES = ("standard", "generation_config_json")


@dataclass(frozen=True)
class Capabilities:
    """What a server offers beyond plain chat completions (declared in the model file)."""

    #: the server returns ``logprobs.content[*].top_logprobs`` on chat completions
    logprobs: bool = False
    #: the most ``top_logprobs`` it accepts (OpenAI: 20; vLLM: ``--max-logprobs``, default 20)
    max_top_logprobs: int = 20
    #: ``raw``: log-probabilities before temperature (vLLM's default ``--logprobs-mode``);
    #: ``processed``: after the request's temperature (vLLM ``processed_logprobs``)
    logprobs_mode: str = "raw"
    #: how a partial assistant answer is continued: ``continue_final_message`` (vLLM, SGLang:
    #: the last message is an assistant message, ``add_generation_prompt: false``) or ``none``
    assistant_prefill: str = "none"
    #: text of the end-of-sequence token(s) as the server spells them in ``top_logprobs``
    eos_tokens: tuple[str, ...] = ("</s>",)
    #: vLLM: send the image's sha256 as the content part's ``uuid`` (skips re-hashing the image)
    multi_modal_uuids: bool = False
    #: the server honours the ``seed`` field
    seed: bool = True
    #: ``standard``: ``temperature`` samples; ``generation_config_json``: the server decodes
    #: greedily unless the body carries ``generation_config`` (a JSON *string*) with
    #: ``do_sample: true`` (``transformers serve``)
    sampling: str = "standard"
    #: the body field of the token limit (newer OpenAI models: ``max_completion_tokens``)
    max_tokens_field: str = "max_tokens"
    #: vocabulary size, bounds the tail mass outside ``top_logprobs`` when temperature > 1
    vocab_size: int = 262144
    #: the most choices (``n``) one request may ask for (OpenAI, vLLM: many; 1: no ``n``)
    max_choices: int = 128
    #: vLLM's ``/v1/chat/completions/batch`` (several conversations in one request, one choice
    #: each): exact mode asks about all partial answers of a prompt in one request per round
    batch_chat: bool = False


@dataclass(frozen=True)
class Prices:
    """USD per million tokens (0 for a self-hosted server), online and through batch jobs.

    Batch prices come from the model file only: ``batch_input_per_million`` /
    ``batch_output_per_million``, or ``batch_discount`` (a fraction off the online prices,
    e.g. 0.5); with neither the batch price is unknown (None).
    """

    input_per_million: float = 0.0
    output_per_million: float = 0.0
    batch_discount: float | None = None
    batch_input_per_million: float | None = None
    batch_output_per_million: float | None = None

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """Cost in USD of the given token counts."""
        return (
            prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million
        ) / 1e6

    def batch_cost(self, prompt_tokens: float, completion_tokens: float) -> float | None:
        """Cost in USD of the given token counts through batch jobs (None: no batch price)."""
        if self.batch_input_per_million is not None or self.batch_output_per_million is not None:
            inp = self.batch_input_per_million
            out = self.batch_output_per_million
            return (
                prompt_tokens * (self.input_per_million if inp is None else inp)
                + completion_tokens * (self.output_per_million if out is None else out)
            ) / 1e6
        if self.batch_discount is not None:
            return self.cost(prompt_tokens, completion_tokens) * (1.0 - self.batch_discount)
        return None


@dataclass(frozen=True)
class BatchSpec:
    """Provider batch jobs (``endpoint.batch`` in the model file; ``true`` enables the
    defaults, OpenAI's Batch API limits): the judge stage writes its requests as JSONL, uploads
    them through ``/files``, submits them through ``/batches`` and reads the output files into
    the response cache (:mod:`.batch`)."""

    enabled: bool = False
    #: lines per input file (OpenAI: 50,000)
    max_lines: int = 50_000
    #: bytes per input file (OpenAI: 200 MB)
    max_bytes: int = 200_000_000
    #: the job's completion window (OpenAI: ``24h``); a job not done by then expires
    completion_window: str = "24h"
    #: seconds between polls of the jobs in flight
    poll_interval_s: float = 60.0
    #: failed or expired lines: ``batch`` (a new job, up to ``max_resubmits`` times, then
    #: online) or ``online`` (sent through the online transport at once)
    retry: str = "batch"
    max_resubmits: int = 1
    #: the ``url`` of each line (default: the chat-completions URL's path, ``/v1/chat/completions``)
    url_path: str | None = None


@dataclass(frozen=True)
class EndpointSpec:
    """One OpenAI-compatible chat-completions endpoint and the model it serves."""

    source: str  # "conf/model/<name>.yaml", for error messages
    backend: str
    base_url: str
    served_model: str
    api_key_env: str | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    api_version: str | None = None  # Azure: sent as the ``api-version`` query parameter
    capabilities: Capabilities = Capabilities()
    prices: Prices = Prices()
    #: image tokens per image, for the dry-run estimate (the server reports the real count)
    image_tokens: int = 1000
    #: overrides of the engine's transport settings for this endpoint (e.g. a lower rpm)
    limits: Mapping[str, Any] = field(default_factory=dict)
    #: provider batch jobs instead of online requests (``batch.enabled``)
    batch: BatchSpec = BatchSpec()

    @property
    def host(self) -> str:
        """Host (and port) of the endpoint, for reports and logs."""
        return urlparse(self.base_url).netloc or self.base_url

    @property
    def url(self) -> str:
        """The chat-completions URL."""
        return self.base_url.rstrip("/") + "/chat/completions"

    @property
    def batch_url(self) -> str:
        """vLLM's batched chat-completions URL (``capabilities.batch_chat``)."""
        return self.base_url.rstrip("/") + "/chat/completions/batch"

    def api_key(self) -> str | None:
        """The key, read from ``api_key_env`` now (never stored on the spec)."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise StylisticBiasError(
                f"{self.source}: endpoint.api_key_env names {self.api_key_env!r}, which is not "
                "set in the environment; export it (the key is never read from a file)"
            )
        return key

    def label(self) -> str:
        """``served_model @ host (openai engine)``: how reports name this model."""
        return f"{self.served_model} @ {self.host} (openai engine, {self.backend})"


@dataclass(frozen=True)
class TransportSpec:
    """How requests are sent: concurrency, timeouts, retries, rate limits."""

    concurrency: int = 8
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    rpm: float | None = None  # requests per minute (None: unlimited)
    tpm: float | None = None  # tokens per minute (prompt estimate + max_tokens; None: unlimited)


_KEYS_ENDPOINT = {
    "backend",
    "base_url",
    "served_model",
    "api_key_env",
    "extra_body",
    "headers",
    "api_version",
    "capabilities",
    "image_tokens",
    "limits",
    "batch",
}
_KEYS_PRICES = (
    "input_per_million",
    "output_per_million",
    "batch_discount",
    "batch_input_per_million",
    "batch_output_per_million",
)


def _choice(src: str, key: str, value: str, valid: tuple[str, ...]) -> str:
    if value not in valid:
        raise StylisticBiasError(f"{src}: {key} {value!r}; valid: {', '.join(valid)}")
    return value


def endpoint_spec(model_cfg: Mapping[str, Any]) -> EndpointSpec:
    """The :class:`EndpointSpec` of a model file (``endpoint:`` and ``prices:`` sections)."""
    name = model_cfg.get("name", "?")
    src = f"conf/model/{name}.yaml"
    ep = model_cfg.get("endpoint")
    if not isinstance(ep, Mapping):
        raise StylisticBiasError(
            f"{src}: the openai engine needs an 'endpoint:' section (base_url, served_model, ...)"
        )
    unknown = set(ep) - _KEYS_ENDPOINT
    if unknown:
        raise StylisticBiasError(
            f"{src}: unknown endpoint key(s) {sorted(unknown)}; valid: {sorted(_KEYS_ENDPOINT)}"
        )
    for key in ("base_url", "served_model"):
        if not ep.get(key):
            raise StylisticBiasError(f"{src}: missing endpoint.{key}")
    base_url = str(ep["base_url"])
    if urlparse(base_url).scheme not in ("http", "https"):
        raise StylisticBiasError(
            f"{src}: endpoint.base_url {base_url!r} must start with http(s)://"
        )
    headers = {str(k): str(v) for k, v in (ep.get("headers") or {}).items()}
    secretish = [k for k in headers if k.lower() in ("authorization", "api-key", "x-api-key")]
    if secretish:
        raise StylisticBiasError(
            f"{src}: endpoint.headers must not hold credentials ({secretish}); name the "
            "environment variable in endpoint.api_key_env instead"
        )
    caps_cfg = dict(ep.get("capabilities") or {})
    valid_caps = set(Capabilities.__dataclass_fields__)
    bad = set(caps_cfg) - valid_caps
    if bad:
        raise StylisticBiasError(
            f"{src}: unknown endpoint.capabilities key(s) {sorted(bad)}; "
            f"valid: {sorted(valid_caps)}"
        )
    if "eos_tokens" in caps_cfg:
        caps_cfg["eos_tokens"] = tuple(str(t) for t in caps_cfg["eos_tokens"])
    caps = Capabilities(**caps_cfg)
    _choice(src, "endpoint.capabilities.assistant_prefill", caps.assistant_prefill, PREFILL_MODES)
    _choice(src, "endpoint.capabilities.logprobs_mode", caps.logprobs_mode, LOGPROBS_MODES)
    _choice(src, "endpoint.capabilities.sampling", caps.sampling, SAMPLING_MODES)
    prices = dict(model_cfg.get("prices") or {})
    bad = set(prices) - set(_KEYS_PRICES)
    if bad:
        raise StylisticBiasError(
            f"{src}: unknown prices key(s) {sorted(bad)}; valid: {', '.join(_KEYS_PRICES)}"
        )
    prices = {k: None if v is None else float(v) for k, v in prices.items()}
    for k in ("input_per_million", "output_per_million"):
        prices[k] = prices.get(k) or 0.0
    disc = prices.get("batch_discount")
    if disc is not None and not 0.0 <= disc < 1.0:
        raise StylisticBiasError(
            f"{src}: prices.batch_discount {disc}; valid: a fraction in [0, 1), e.g. 0.5"
        )
    return EndpointSpec(
        source=src,
        backend=_choice(src, "endpoint.backend", str(ep.get("backend", "other")), BACKENDS),
        base_url=base_url,
        served_model=str(ep["served_model"]),
        api_key_env=str(ep["api_key_env"]) if ep.get("api_key_env") else None,
        extra_body=dict(ep.get("extra_body") or {}),
        headers=headers,
        api_version=str(ep["api_version"]) if ep.get("api_version") else None,
        capabilities=caps,
        prices=Prices(**prices),
        image_tokens=int(ep.get("image_tokens", 1000)),
        limits=dict(ep.get("limits") or {}),
        batch=batch_spec(src, ep.get("batch")),
    )


def batch_spec(src: str, cfg: Any) -> BatchSpec:
    """``endpoint.batch`` as a :class:`BatchSpec` (``true``/``false``/null or a mapping)."""
    if cfg is None or isinstance(cfg, bool):
        return BatchSpec(enabled=bool(cfg))
    if not isinstance(cfg, Mapping):
        raise StylisticBiasError(
            f"{src}: endpoint.batch {cfg!r}; valid: true, false or a mapping of "
            f"{', '.join(BatchSpec.__dataclass_fields__)}"
        )
    valid = BatchSpec.__dataclass_fields__
    bad = set(cfg) - set(valid)
    if bad:
        raise StylisticBiasError(
            f"{src}: unknown endpoint.batch key(s) {sorted(bad)}; valid: {', '.join(valid)}"
        )
    try:
        out = BatchSpec(
            enabled=bool(cfg.get("enabled", True)),
            max_lines=int(cfg.get("max_lines", BatchSpec.max_lines)),
            max_bytes=int(cfg.get("max_bytes", BatchSpec.max_bytes)),
            completion_window=str(cfg.get("completion_window", BatchSpec.completion_window)),
            poll_interval_s=float(cfg.get("poll_interval_s", BatchSpec.poll_interval_s)),
            retry=str(cfg.get("retry", BatchSpec.retry)),
            max_resubmits=int(cfg.get("max_resubmits", BatchSpec.max_resubmits)),
            url_path=str(cfg["url_path"]) if cfg.get("url_path") else None,
        )
    except (TypeError, ValueError) as exc:
        raise StylisticBiasError(f"{src}: endpoint.batch: {exc}") from None
    _choice(src, "endpoint.batch.retry", out.retry, BATCH_RETRY)
    for key in ("max_lines", "max_bytes"):
        if getattr(out, key) < 1:
            raise StylisticBiasError(f"{src}: endpoint.batch.{key} must be >= 1")
    if out.max_resubmits < 0 or out.poll_interval_s < 0:
        raise StylisticBiasError(
            f"{src}: endpoint.batch.max_resubmits and poll_interval_s must be >= 0"
        )
    return out


def transport_spec(engine_cfg: Mapping[str, Any], endpoint: EndpointSpec) -> TransportSpec:
    """The engine's ``transport:`` section, overridden by the endpoint's ``limits:``."""
    cfg = {**dict(engine_cfg.get("transport") or {}), **dict(endpoint.limits)}
    valid = set(TransportSpec.__dataclass_fields__)
    bad = set(cfg) - valid
    if bad:
        raise StylisticBiasError(
            f"engine.transport / {endpoint.source} endpoint.limits: unknown key(s) {sorted(bad)}; "
            f"valid: {sorted(valid)}"
        )
    out = TransportSpec(**{k: v for k, v in cfg.items() if v is not None or k in ("rpm", "tpm")})
    if out.concurrency < 1 or out.max_retries < 0:
        raise StylisticBiasError("engine.transport: concurrency must be >= 1, max_retries >= 0")
    return out
