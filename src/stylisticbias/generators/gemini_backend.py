"""The paper's own generators through ``google-genai``: Imagen 4 base faces, Gemini 2.5 Flash
Image ("Nano Banana") edits.

* Base faces: ``client.models.generate_images(model=base_model, prompt=spec.prompt, config=...)``
  (Imagen's ``:predict``), one image per request. If ``base_model`` is not an ``imagen-*`` model
  (e.g. ``gemini-2.5-flash-image``), base faces are drawn with ``generate_content`` from the
  prompt alone instead.
* Edits: ``client.models.generate_content(model=edit_model, contents=[prompt, base image])``;
  the image part of the response is the result.

google-genai >= 3 sends ``generate_images`` (Imagen) only through Vertex AI, so ``vertexai``
defaults to true: an API key (Vertex AI express mode) or ``project``/``location`` with
application-default credentials. With a Gemini Developer API (AI Studio) key, set
``vertexai: false`` and a Gemini image model as ``base_model``.

The API key is read from the first set environment variable of ``api_key_env`` (default
``GEMINI_API_KEY``, ``GOOGLE_API_KEY``); it is never logged, and it is scrubbed from every
reason string. A missing key raises :class:`StylisticBiasError` at construction time.

Transient failures (HTTP 408/429/5xx, timeouts, connection errors) are retried with
exponential backoff and jitter (``max_retries``). Refusals and safety blocks are *results*, not
exceptions: ``status="blocked"`` (a safety/prohibited-content finish reason, a prompt block, an
Imagen RAI filter) or ``status="refused"`` (no image, e.g. text only), with the API's reason, so
the dataset builder records them and can retry them later. Retries that run out and other
per-request API errors give ``status="error"``; a rejected key raises.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PIL import Image

from stylisticbias.errors import StylisticBiasError
from stylisticbias.generators.base import EditSpec, FaceSpec, Generator, GenResult

log = logging.getLogger(__name__)

#: HTTP status codes retried with backoff
TRANSIENT_CODES = frozenset({408, 429, 500, 502, 503, 504})
#: candidate finish reasons that mean the output was blocked by a safety system
BLOCK_FINISH_REASONS = frozenset(
    {
        "SAFETY",
        "PROHIBITED_CONTENT",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "BLOCKLIST",
        "SPII",
        "RECITATION",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)
#: phrases of a 400 answer that mean the prompt was rejected by the responsible-AI filter
_RAI_400_HINTS = ("responsible ai", "sensitive words", "violate", "safety", "prohibited")
#: phrases that mean the key/credentials themselves are bad (every request would fail)
_AUTH_HINTS = ("api key not valid", "api_key_invalid", "permission denied", "unauthenticated")
FILE_FORMATS = ("jpg", "webp", "png")


def _enum_name(value: Any) -> str | None:
    if value is None:
        return None
    return str(getattr(value, "value", value))


def _transient_exceptions() -> tuple[type[BaseException], ...]:
    excs: list[type[BaseException]] = [TimeoutError, ConnectionError]
    for mod in ("httpx", "httpx2"):
        try:
            m = __import__(mod)
        except ImportError:  # pragma: no cover - depends on the install
            continue
        excs += [m.TimeoutException, m.NetworkError, m.RemoteProtocolError]
    return tuple(excs)


class GeminiGenerator(Generator):
    """Imagen 4 base faces and Gemini 2.5 Flash Image edits through the google-genai SDK.

    Args:
        base_model: Imagen model for base faces (or a Gemini image model, see module doc).
        edit_model: Gemini image model for edits.
        vertexai: use Vertex AI (required for Imagen with google-genai >= 3).
        project, location: Vertex AI project/location for application-default credentials;
            with ``project`` set no API key is needed.
        api_key_env: environment variable name(s) holding the API key, first set one wins.
        base_url: point the client at another endpoint (a proxy, a test server).
        api_version: override the SDK's API version path segment.
        timeout_s: per-request HTTP timeout.
        max_retries: retries after the first attempt for transient failures.
        backoff_initial_s, backoff_max_s, backoff_jitter_s: exponential backoff with jitter.
        concurrency: requests in flight per batch (thread pool size).
        batch_size: requests the builder passes per call.
        send_seed: pass ``spec.seed`` (mod 2**31) as the generation seed of edits; Imagen only
            accepts a seed with ``add_watermark: false`` in ``imagen_config``, and gets it then.
        imagen_config: extra ``types.GenerateImagesConfig`` fields (``aspect_ratio``,
            ``image_size``, ``person_generation``, ``safety_filter_level``, ``enhance_prompt``,
            ``add_watermark``, ...).
        edit_config: extra ``types.GenerateContentConfig`` fields (``temperature``,
            ``safety_settings``, ``image_config``, ...).
        full_body_aspect_ratio: ``image_config.aspect_ratio`` for full-body fashion edits
            (e.g. ``"2:3"``); null = the model's choice (the paper's setting: prompt only).
        file_format: ``jpg`` | ``webp`` | ``png`` (the builder's save format).
        quality: JPEG/WebP quality.
    """

    text_to_image = True  # prompts are sent as given: any prompt renders

    name = "gemini"

    def __init__(
        self,
        *,
        base_model: str = "imagen-4.0-generate-001",
        edit_model: str = "gemini-2.5-flash-image",
        vertexai: bool = True,
        project: str | None = None,
        location: str | None = None,
        api_key_env: str | Sequence[str] = ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        base_url: str | None = None,
        api_version: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 6,
        backoff_initial_s: float = 2.0,
        backoff_max_s: float = 60.0,
        backoff_jitter_s: float = 1.0,
        concurrency: int = 4,
        batch_size: int = 8,
        send_seed: bool = True,
        imagen_config: Mapping[str, Any] | None = None,
        edit_config: Mapping[str, Any] | None = None,
        full_body_aspect_ratio: str | None = None,
        file_format: str = "jpg",
        quality: int = 95,
    ) -> None:
        from google import genai
        from google.genai import types

        where = "conf/generator (gemini)"
        if file_format not in FILE_FORMATS:
            raise StylisticBiasError(
                f"{where}.file_format: {file_format!r}; valid: {', '.join(FILE_FORMATS)}"
            )
        for key, value in (("concurrency", concurrency), ("batch_size", batch_size)):
            if int(value) < 1:
                raise StylisticBiasError(f"{where}.{key}: must be >= 1, got {value}")
        if int(max_retries) < 0:
            raise StylisticBiasError(f"{where}.max_retries: must be >= 0, got {max_retries}")
        self.base_model = base_model
        self.edit_model = edit_model
        self.use_imagen = base_model.split("/")[-1].startswith("imagen")
        if self.use_imagen and not vertexai:
            raise StylisticBiasError(
                f"{where}: base_model {base_model!r} is an Imagen model, which google-genai "
                "serves only through Vertex AI; set vertexai: true (API key in express mode, or "
                "project/location), or use a Gemini image model as base_model"
            )
        env_names = [api_key_env] if isinstance(api_key_env, str) else list(api_key_env)
        api_key = next((os.environ[n] for n in env_names if os.environ.get(n)), None)
        if api_key is None and not (vertexai and project):
            raise StylisticBiasError(
                f"gemini generator: set {' or '.join(env_names)} to an API key "
                "(or, with vertexai: true, set project/location to use application-default "
                "credentials)"
            )
        self._secret = api_key.strip() if api_key else None
        try:
            self._imagen_extra = types.GenerateImagesConfig(**dict(imagen_config or {}))
            self._edit_extra = types.GenerateContentConfig(**dict(edit_config or {}))
        except Exception as exc:  # pydantic.ValidationError
            first = str(exc).strip().splitlines()[0]
            raise StylisticBiasError(f"{where}: bad imagen_config/edit_config: {first}") from exc
        self.send_seed = bool(send_seed)
        self.full_body_aspect_ratio = full_body_aspect_ratio
        self.file_format = file_format
        self.quality = int(quality)
        self.batch_size = int(batch_size)
        self.concurrency = int(concurrency)
        self.max_retries = int(max_retries)
        self.backoff = (float(backoff_initial_s), float(backoff_max_s), float(backoff_jitter_s))

        http = types.HttpOptions(
            base_url=base_url,
            api_version=api_version,
            timeout=int(float(timeout_s) * 1000),
        )
        client_kwargs: dict[str, Any] = {"vertexai": bool(vertexai), "http_options": http}
        if self._secret is not None and not project:
            client_kwargs["api_key"] = self._secret
        if project:
            client_kwargs["project"] = project
            client_kwargs["location"] = location or "global"
        try:
            self._client = genai.Client(**client_kwargs)
        except ValueError as exc:
            raise StylisticBiasError(f"gemini generator: {self._scrub(str(exc))}") from exc
        self._types = types
        self._transient_excs = _transient_exceptions()
        log.info(
            "gemini generator: base %s, edits %s (%s)",
            base_model,
            edit_model,
            "Vertex AI" if vertexai else "Gemini Developer API",
        )

    # ---- bookkeeping ---------------------------------------------------------------------
    @property
    def save_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``PIL.Image.save`` matching ``file_format``."""
        return {} if self.file_format == "png" else {"quality": self.quality}

    def describe(self) -> dict[str, Any]:
        """Provenance for manifests / MLflow (never includes credentials)."""
        return {"backend": self.name, "base_model": self.base_model, "edit_model": self.edit_model}

    def close(self) -> None:
        """Close the HTTP client."""
        close = getattr(self._client, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):  # best effort
                close()

    def _scrub(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "[redacted]")
        return text

    # ---- retries and error mapping -------------------------------------------------------
    def _is_transient(self, exc: BaseException) -> bool:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            return exc.code in TRANSIENT_CODES
        return isinstance(exc, self._transient_excs)

    def _call(self, what: str, fn: Callable[[], GenResult]) -> GenResult:
        """Run one request with retries; map API errors to results or a clear exception."""
        import tenacity
        from google.genai import errors

        initial, maximum, jitter = self.backoff
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=tenacity.wait_exponential_jitter(initial=initial, max=maximum, jitter=jitter),
            retry=tenacity.retry_if_exception(self._is_transient),
            before_sleep=lambda rs: log.warning(
                "gemini %s: %s; retry %d/%d",
                what,
                self._describe_exc(rs.outcome.exception()) if rs.outcome else "?",
                rs.attempt_number,
                self.max_retries,
            ),
            reraise=True,
        )
        try:
            return retrying(fn)
        except errors.APIError as exc:
            msg = self._describe_exc(exc)
            low = msg.lower()
            if exc.code in (401, 403) or any(h in low for h in _AUTH_HINTS):
                raise StylisticBiasError(
                    f"gemini generator: the API rejected the credentials ({msg})"
                ) from None
            if exc.code in TRANSIENT_CODES:
                return GenResult(None, "error", f"{msg} (after {self.max_retries + 1} attempts)")
            if exc.code == 400 and any(h in low for h in _RAI_400_HINTS):
                return GenResult(None, "blocked", msg)
            return GenResult(None, "error", msg)
        except Image.UnidentifiedImageError as exc:
            return GenResult(None, "error", f"undecodable image in the response: {exc}")
        except self._transient_excs as exc:
            return GenResult(
                None,
                "error",
                f"{type(exc).__name__}: {self._scrub(str(exc))} "
                f"(after {self.max_retries + 1} attempts)",
            )

    def _describe_exc(self, exc: BaseException | None) -> str:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            text = f"HTTP {exc.code} {exc.status or ''}".strip()
            if exc.message:
                text += f": {exc.message}"
            return self._scrub(text)
        return self._scrub(f"{type(exc).__name__}: {exc}")

    def _map(
        self, what: str, fn: Callable[[Any], GenResult], items: Sequence[Any]
    ) -> list[GenResult]:
        if not items:
            return []
        workers = min(self.concurrency, len(items))
        if workers == 1:
            return [self._call(what, lambda it=it: fn(it)) for it in items]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gemini") as pool:
            return list(pool.map(lambda it: self._call(what, lambda: fn(it)), items))

    # ---- response parsing ----------------------------------------------------------------
    def _decode(self, data: bytes) -> Image.Image:
        img = Image.open(io.BytesIO(data))
        img.load()
        return img.convert("RGB")

    def _from_images_response(self, resp: Any) -> GenResult:
        images = list(getattr(resp, "generated_images", None) or [])
        reasons: list[str] = []
        for gi in images:
            img = getattr(gi, "image", None)
            data = getattr(img, "image_bytes", None) if img is not None else None
            if data:
                return GenResult(self._decode(data))
            if getattr(gi, "rai_filtered_reason", None):
                reasons.append(str(gi.rai_filtered_reason))
        reason = (
            "; ".join(reasons) if reasons else "no image returned (RAI filter, no reason given)"
        )
        return GenResult(None, "blocked", self._scrub(f"imagen: {reason}"))

    def _from_content_response(self, resp: Any) -> GenResult:
        fb = getattr(resp, "prompt_feedback", None)
        block = _enum_name(getattr(fb, "block_reason", None)) if fb is not None else None
        if block:
            msg = getattr(fb, "block_reason_message", None)
            reason = f"prompt blocked: {block}" + (f": {msg}" if msg else "")
            return GenResult(None, "blocked", self._scrub(reason))
        candidates = list(getattr(resp, "candidates", None) or [])
        if not candidates:
            return GenResult(None, "refused", "empty response (no candidates)")
        texts: list[str] = []
        finish: str | None = None
        finish_msg: str | None = None
        for cand in candidates:
            finish = finish or _enum_name(getattr(cand, "finish_reason", None))
            finish_msg = finish_msg or getattr(cand, "finish_message", None)
            content = getattr(cand, "content", None)
            parts = list(getattr(content, "parts", None) or []) if content is not None else []
            for part in reversed(parts):
                blob = getattr(part, "inline_data", None)
                if blob is not None and blob.data and not getattr(part, "thought", False):
                    mime = (blob.mime_type or "").lower()
                    if not mime or mime.startswith("image/"):
                        return GenResult(self._decode(blob.data))
            texts += [p.text for p in parts if getattr(p, "text", None)]
        detail = f"finish_reason={finish or 'unknown'}"
        if finish_msg:
            detail += f": {finish_msg}"
        if texts:
            snippet = " ".join(" ".join(texts).split())
            detail += f"; text: {snippet[:300]}"
        status = "blocked" if finish in BLOCK_FINISH_REASONS else "refused"
        return GenResult(None, status, self._scrub(f"no image returned ({detail})"))

    # ---- requests ------------------------------------------------------------------------
    def _imagen_one(self, spec: FaceSpec) -> GenResult:
        cfg = self._imagen_extra.model_copy(deep=True)
        cfg.number_of_images = 1
        if cfg.include_rai_reason is None:
            cfg.include_rai_reason = True
        if self.send_seed and cfg.add_watermark is False and cfg.seed is None:
            cfg.seed = int(spec.seed) % 2**31
        resp = self._client.models.generate_images(
            model=self.base_model, prompt=spec.prompt, config=cfg
        )
        return self._from_images_response(resp)

    def _content_config(self, seed: int, aspect_ratio: str | None) -> Any:
        types = self._types
        cfg = self._edit_extra.model_copy(deep=True)
        if cfg.response_modalities is None:
            cfg.response_modalities = ["IMAGE"]
        if self.send_seed and cfg.seed is None:
            cfg.seed = int(seed) % 2**31
        if aspect_ratio:
            cfg.image_config = (cfg.image_config or types.ImageConfig()).model_copy(
                update={"aspect_ratio": aspect_ratio}
            )
        return cfg

    def _text_to_image_one(self, spec: FaceSpec) -> GenResult:
        resp = self._client.models.generate_content(
            model=self.base_model,
            contents=[spec.prompt],
            config=self._content_config(spec.seed, None),
        )
        return self._from_content_response(resp)

    def generate_faces(self, specs: Sequence[FaceSpec]) -> list[GenResult]:
        """One Imagen request per spec (prompt exactly as given), in parallel."""
        fn = self._imagen_one if self.use_imagen else self._text_to_image_one
        return self._map("base face", fn, list(specs))

    def edit(self, base: Image.Image, edits: Sequence[EditSpec]) -> list[GenResult]:
        """One ``generate_content([prompt, base image])`` request per edit, in parallel."""
        buf = io.BytesIO()
        base.convert("RGB").save(buf, format="PNG")
        part = self._types.Part.from_bytes(data=buf.getvalue(), mime_type="image/png")

        def one(e: EditSpec) -> GenResult:
            aspect = self.full_body_aspect_ratio if e.variation.framing == "full_body" else None
            resp = self._client.models.generate_content(
                model=self.edit_model,
                contents=[e.prompt, part],
                config=self._content_config(e.seed, aspect),
            )
            return self._from_content_response(resp)

        return self._map("edit", one, list(edits))
