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
    """USD per million tokens (0 for a self-hosted server)."""

    input_per_million: float = 0.0
    output_per_million: float = 0.0

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """Cost in USD of the given token counts."""
        return (
            prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million
        ) / 1e6


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
}


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
    prices = model_cfg.get("prices") or {}
    bad = set(prices) - {"input_per_million", "output_per_million"}
    if bad:
        raise StylisticBiasError(
            f"{src}: unknown prices key(s) {sorted(bad)}; valid: input_per_million, "
            "output_per_million"
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
        prices=Prices(**{k: float(v) for k, v in prices.items()}),
        image_tokens=int(ep.get("image_tokens", 1000)),
        limits=dict(ep.get("limits") or {}),
    )


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
