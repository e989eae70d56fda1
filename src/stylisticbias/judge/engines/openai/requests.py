"""Request bodies for the ``openai`` engine, built from the shared prompt builders.

The image is read and base64-encoded **once per image** (:func:`encode_image`) and the same data
URL goes into all of its requests. The user turn is :func:`~stylisticbias.judge.protocol.prompts.
chat_messages`' order (image first, then the Fig. 12 text) in the OpenAI content-part shape;
a task prompt's system message is a ``system`` message before it (plain text content).
The cache key is computed from the body with the data URL replaced by the image's sha256.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stylisticbias.judge.engines.openai.cache import request_key
from stylisticbias.judge.engines.openai.spec import EndpointSpec
from stylisticbias.judge.engines.openai.transport import ApiRequest
from stylisticbias.judge.protocol.prompts import chat_messages

#: rough characters per text token, for estimates only (the server reports real counts)
CHARS_PER_TOKEN = 4.0


@dataclass(frozen=True)
class EncodedImage:
    """One image file as sent: its sha256 and its base64 data URL."""

    sha256: str
    data_url: str


def encode_image(path: str | Path) -> EncodedImage:
    """Read ``path`` once; the file's own bytes are sent (no re-encoding)."""
    raw = Path(path).read_bytes()
    mime = mimetypes.guess_type(str(path))[0] or "image/png"
    return EncodedImage(
        hashlib.sha256(raw).hexdigest(),
        f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}",
    )


def openai_messages(
    text: str, image_part: Mapping[str, Any], system: str = ""
) -> list[dict[str, Any]]:
    """:func:`chat_messages` with the image as an OpenAI ``image_url`` content part (and the
    ``system`` message, if any, as a ``system`` message of plain text)."""
    msgs = chat_messages(text, None, system)
    for msg in msgs:
        if msg["role"] == "system":
            msg["content"] = system
            continue
        msg["content"] = [
            dict(image_part) if part.get("type") == "image" else part for part in msg["content"]
        ]
    return msgs


def _user(messages: Sequence[Mapping[str, Any]]) -> int:
    """The index of the user message (after a system message, if any)."""
    return next(i for i, m in enumerate(messages) if m.get("role") == "user")


class RequestBuilder:
    """Bodies and cache keys of the engine's two request kinds."""

    def __init__(self, endpoint: EndpointSpec, temperature: float, max_new_tokens: int) -> None:
        self.endpoint = endpoint
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        self.caps = endpoint.capabilities
        extra = dict(endpoint.extra_body)
        self._gen_config = dict(extra.pop("generation_config", None) or {})
        self._extra = extra

    def _image_part(self, img: EncodedImage, url: str) -> dict[str, Any]:
        part: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
        if self.caps.multi_modal_uuids:
            part["uuid"] = img.sha256
        return part

    def _base(
        self, img: EncodedImage, text: str, max_tokens: int, system: str = ""
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.endpoint.served_model,
            "messages": openai_messages(text, self._image_part(img, ""), system),
            "temperature": self.temperature,
            self.caps.max_tokens_field: max_tokens,
        }
        body.update(copy.deepcopy(self._extra))
        return body

    def _finish(self, body: dict[str, Any], img: EncodedImage, kind: str, text: str) -> ApiRequest:
        est = (
            self.endpoint.image_tokens
            + int(len(text) / CHARS_PER_TOKEN)
            + int(body.get(self.caps.max_tokens_field, 0)) * int(body.get("n", 1))
        )
        keyed = _with_image_url(body, f"sha256:{img.sha256}")
        sent = _with_image_url(body, img.data_url)
        return ApiRequest(request_key(self.endpoint.url, keyed), sent, img.sha256, kind, est)

    def generate(self, img: EncodedImage, text: str, seed: int, system: str = "") -> ApiRequest:
        """One literal-protocol request: seeded, temperature T, ``max_new_tokens`` (``system``:
        a system message before the user turn; none when empty)."""
        body = self._base(img, text, self.max_new_tokens, system)
        if self.caps.seed:
            body["seed"] = int(seed)
        if self.caps.sampling == "generation_config_json":
            gc = {
                "do_sample": True,
                "temperature": self.temperature,
                "max_new_tokens": self.max_new_tokens,
                **self._gen_config,
            }
            body["generation_config"] = json.dumps(gc, sort_keys=True)
        return self._finish(body, img, "generate", text)

    def logprobs(
        self,
        img: EncodedImage,
        text: str,
        prefix: str,
        top_k: int,
        *,
        paths: int = 0,
        temperature: float | None = None,
        system: str = "",
    ) -> ApiRequest:
        """Log-probabilities after the partial answer ``prefix``: of the next token
        (``paths=0``), or along ``paths`` sampled continuations (``n``) of up to
        ``max_new_tokens`` tokens each, at ``temperature`` (default: the judge's)."""
        body = self._base(img, text, self.max_new_tokens if paths else 1, system)
        if paths:
            if paths > 1:
                body["n"] = int(paths)
            if temperature is not None:
                body["temperature"] = float(temperature)
        if prefix:
            body["messages"].append({"role": "assistant", "content": prefix})
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        body["logprobs"] = True
        body["top_logprobs"] = int(top_k)
        if self.caps.seed:
            body["seed"] = 0
        return self._finish(body, img, "logprobs", text + prefix)

    def logprobs_images(
        self,
        imgs: Sequence[EncodedImage],
        text: str,
        prefix: str,
        top_k: int,
        *,
        paths: int = 0,
        temperature: float | None = None,
        system: str = "",
    ) -> ApiRequest:
        """:meth:`logprobs` for a prompt with several images (one ``image_url`` part each, in
        order, before the text; none for a text-only prompt), keyed by all their hashes."""
        kw: dict[str, Any] = {"paths": paths, "temperature": temperature, "system": system}
        if len(imgs) == 1:
            return self.logprobs(imgs[0], text, prefix, top_k, **kw)
        body = self.logprobs(EncodedImage("", ""), text, prefix, top_k, **kw).body
        return self._several(body, imgs, "logprobs", text + prefix)

    def generate_images(
        self, imgs: Sequence[EncodedImage], text: str, seed: int, system: str = ""
    ) -> ApiRequest:
        """:meth:`generate` for a prompt with several images, or none (text only)."""
        if len(imgs) == 1:
            return self.generate(imgs[0], text, seed, system)
        body = self.generate(EncodedImage("", ""), text, seed, system).body
        return self._several(body, imgs, "generate", text)

    def _several(
        self, body: dict[str, Any], imgs: Sequence[EncodedImage], kind: str, text: str
    ) -> ApiRequest:
        """``body`` (built for one placeholder image) with one image part per image of ``imgs``."""
        msgs = list(body["messages"])
        u = _user(msgs)
        parts = [p for p in msgs[u]["content"] if p.get("type") != "image_url"]
        msgs[u] = {**msgs[u], "content": [*(self._image_part(im, "") for im in imgs), *parts]}
        body = {**body, "messages": msgs}
        sha = hashlib.sha256("|".join(im.sha256 for im in imgs).encode()).hexdigest()
        est = (
            len(imgs) * self.endpoint.image_tokens
            + int(len(text) / CHARS_PER_TOKEN)
            + int(body.get(self.caps.max_tokens_field, 1)) * int(body.get("n", 1))
        )
        keyed = _with_image_url(body, [f"sha256:{im.sha256}" for im in imgs])
        sent = _with_image_url(body, [im.data_url for im in imgs])
        return ApiRequest(request_key(self.endpoint.url, keyed), sent, sha, kind, est)

    def logprobs_batch(
        self,
        imgs: Sequence[EncodedImage],
        text: str,
        prefixes: Sequence[str],
        top_k: int,
        *,
        temperature: float | None = None,
        system: str = "",
    ) -> ApiRequest:
        """One request to vLLM's ``/chat/completions/batch`` asking, for every partial answer
        in ``prefixes`` (each non-empty), one continuation of up to ``max_new_tokens`` with
        log-probabilities at every position: choice ``i`` answers ``prefixes[i]``."""
        if not prefixes or any(not p for p in prefixes):
            raise ValueError("a batch of continuations needs non-empty partial answers")
        one = [
            self.logprobs_images(
                imgs, text, p, top_k, paths=1, temperature=temperature, system=system
            )
            for p in prefixes
        ]
        body = {k: v for k, v in one[0].body.items() if k != "messages"}
        body.pop("n", None)
        body["messages"] = [r.body["messages"] for r in one]
        keyed = {**body, "messages": [_keyed_messages(r.body, imgs) for r in one]}
        est = sum(r.est_tokens for r in one)
        sha = one[0].image_sha256
        key = request_key(self.endpoint.batch_url, keyed)
        return ApiRequest(key, body, sha, "logprobs", est, url=self.endpoint.batch_url)


def _keyed_messages(body: Mapping[str, Any], imgs: Sequence[EncodedImage]) -> Any:
    """The messages of ``body`` with each image part carrying its hash instead of its bytes."""
    urls = [f"sha256:{im.sha256}" for im in imgs]
    return _with_image_url(body, urls if len(urls) != 1 else urls[0])["messages"]


def _with_image_url(body: Mapping[str, Any], url: str | Sequence[str]) -> dict[str, Any]:
    """A copy of ``body`` whose image parts carry ``url`` (only the message list is copied);
    a sequence of urls gives the i-th image part the i-th url."""
    out = dict(body)
    urls = iter(url) if not isinstance(url, str) else None
    msgs = []
    for msg in body["messages"]:
        content = msg.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if isinstance(part, Mapping) and part.get("type") == "image_url":
                    u = next(urls) if urls is not None else url
                    part = {**part, "image_url": {**part["image_url"], "url": u}}
                parts.append(part)
            msg = {**msg, "content": parts}
        msgs.append(msg)
    out["messages"] = msgs
    return out
