"""A loopback chat-completions server in vLLM's response shape, backed by a local checkpoint.

For tests and the benchmark only (no internet, no GPU): it answers ``/v1/chat/completions`` from
the *true* next-token distribution of a transformers image-text-to-text checkpoint (the tiny
random-weight ones of :mod:`stylisticbias_dev.tiny`), in the shape vLLM documents:

* ``logprobs: true, top_logprobs: k`` -> ``choices[0].logprobs.content[0].top_logprobs`` with
  raw (untempered) log-probabilities, vLLM's default ``--logprobs-mode raw_logprobs``;
* ``continue_final_message: true`` with a final assistant message -> the answer continues that
  text (the partial answer's tokens are appended after the generation prompt);
* otherwise a seeded ``generate`` (``do_sample``, the request's temperature and ``max_tokens``).

Fault injection (``--faults JSON``), deterministic per request body and only on its first
attempt: ``{"429": 0.1, "500": 0.1, "timeout": 0.05, "malformed": 0.05, "retry_after": 0.2,
"timeout_delay": 3, "refuse_images": [sha256, ...], "refuse_400_images": [...]}`` (rates are
fractions of distinct bodies). ``"planted_logprobs": {"": [[token, logprob], ...], "*": [...]}``
answers every log-probability request from that table instead of the model: the entry keyed by
the partial answer (``""`` for the first token), else ``"*"`` -- the k-option exactness test
plants its option log-probabilities this way. Planted answers (the annotate tests): ``"planted":
[{"image": sha256, "contains": text, "content": reply} | {..., "refusal": reason}, ...]`` answers
a request showing that image whose prompt contains ``contains`` with that reply (the first
match), without the model; ``--model`` may then be left out. ``--log FILE`` appends one JSON
line per request handled (``{"key", "image", "images", "system", "event", "status",
"arrived"}``, ``images`` the number of images the request carried, ``system`` the text of its
system message ('' when none; the model renders it as the template's system turn), ``arrived``
the Unix time the request
reached the server; event ``answered``, ``late`` (answered after a timeout
fault), ``429``, ``500`` or ``malformed``) so a test can count what the server really did.
``POST /admin/faults`` with a fault plan as its JSON body replaces the plan of a running server
and forgets which bodies it has seen (so a test can reuse one server, and its loaded model, for a
fault-free and a faulty run; the API key, when required, is required here too).

CLI: ``python -m stylisticbias_dev.openai_loopback --model DIR --port N [...]``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import io
import json
import logging
import math
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: one returned choice: its positions (token, logprob, top_logprobs) and finish reason
Path_ = tuple[list[dict[str, Any]], str]


class LoopbackModel:
    """The checkpoint, its processor, and next-token log-probabilities of chat requests."""

    def __init__(self, path: str | Path) -> None:
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        torch.set_num_threads(1)
        self.model = AutoModelForImageTextToText.from_pretrained(str(path), dtype=torch.float32)
        self.model.eval()
        self.processor = AutoProcessor.from_pretrained(str(path))
        self.tok = self.processor.tokenizer
        self.lock = threading.Lock()
        self._img_cache: dict[str, Any] = {}

    def _image(self, url: str) -> Any:
        from PIL import Image

        if url not in self._img_cache:
            raw = base64.b64decode(url.split(",", 1)[1])
            self._img_cache = {url: Image.open(io.BytesIO(raw)).convert("RGB")}  # keep one
        return self._img_cache[url]

    def encode(self, messages: list[dict[str, Any]]) -> tuple[Any, list[int]]:
        """Model inputs of the (system and) user turn + generation prompt, and the prefill's
        token ids."""
        user = _user_message(messages)
        content = []
        for part in user["content"]:
            if part.get("type") == "image_url":
                content.append({"type": "image", "image": self._image(part["image_url"]["url"])})
            elif part.get("type") == "text":
                content.append({"type": "text", "text": part["text"]})
        system = _system_text(messages)
        turns = (
            [{"role": "system", "content": [{"type": "text", "text": system}]}] if system else []
        )
        enc = self.processor.apply_chat_template(
            [*turns, {"role": "user", "content": content}],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
        )
        prefill: list[int] = []
        if len(messages) > 1 and messages[-1].get("role") == "assistant":
            text = messages[-1].get("content") or ""
            prefill = list(self.tok(text, add_special_tokens=False)["input_ids"])
        return enc, prefill

    def next_logprobs(self, messages: list[dict[str, Any]]) -> tuple[Any, int]:
        """Raw log-softmax of the next token (float64) and the prompt length."""
        import torch

        enc, prefill = self.encode(messages)
        if prefill:
            ids = torch.tensor([prefill], dtype=enc["input_ids"].dtype)
            enc["input_ids"] = torch.cat([enc["input_ids"], ids], 1)
            enc["attention_mask"] = torch.ones_like(enc["input_ids"])
        with self.lock, torch.inference_mode():
            logits = self.model(**enc, logits_to_keep=1).logits[0, -1].double()
        return torch.log_softmax(logits, -1), int(enc["input_ids"].shape[1])

    def paths(
        self,
        messages: list[dict[str, Any]],
        k: int,
        n: int,
        temperature: float,
        max_tokens: int,
        seed: int,
    ) -> tuple[list[Path_], int]:
        """``n`` continuations of the (prefilled) answer, sampled at ``temperature`` (greedy at
        0), each position with the raw top-``k`` log-probabilities (vLLM's
        ``raw_logprobs``): ``([(positions, finish reason), ...], prompt tokens)``."""
        import torch

        enc, prefill = self.encode(messages)
        if prefill:
            ids = torch.tensor([prefill], dtype=enc["input_ids"].dtype)
            enc["input_ids"] = torch.cat([enc["input_ids"], ids], 1)
            enc["attention_mask"] = torch.ones_like(enc["input_ids"])
        sample = float(temperature) > 0
        kw: dict[str, Any] = {
            "do_sample": sample,
            "max_new_tokens": int(max_tokens),
            "num_return_sequences": int(n),
            "output_logits": True,
            "return_dict_in_generate": True,
        }
        if sample:
            kw.update(temperature=float(temperature), top_k=0, top_p=1.0)
        with self.lock, torch.inference_mode():
            torch.manual_seed(int(seed))
            out = self.model.generate(**enc, **kw)
        n_prompt = int(enc["input_ids"].shape[1])
        eos = self.tok.eos_token_id
        result = []
        for i in range(int(n)):
            positions, finish = [], "length"
            for step, logits in enumerate(out.logits):
                lp = torch.log_softmax(logits[i].double(), -1)
                tid = int(out.sequences[i, n_prompt + step])
                vals, ids = lp.topk(max(k, 1))
                top = [self._entry(int(j), float(v)) for v, j in zip(vals.tolist(), ids.tolist())]
                positions.append({**self._entry(tid, float(lp[tid])), "top_logprobs": top[:k]})
                if tid == eos:
                    finish = "stop"
                    break
            result.append((positions, finish))
        return result, n_prompt

    def _entry(self, tid: int, logprob: float) -> dict[str, Any]:
        text = self.token_text(tid)
        return {"token": text, "logprob": logprob, "bytes": list(text.encode())}

    def generate(
        self, messages: list[dict[str, Any]], temperature: float, max_tokens: int, seed: int
    ) -> tuple[str, int, int, str]:
        """A seeded sampled answer: (text, prompt tokens, completion tokens, finish reason)."""
        import torch

        enc, _ = self.encode(messages)
        with self.lock, torch.inference_mode():
            torch.manual_seed(int(seed))
            out = self.model.generate(
                **enc,
                do_sample=True,
                temperature=float(temperature),
                max_new_tokens=int(max_tokens),
            )
        new = out[0, enc["input_ids"].shape[1] :].tolist()
        eos = self.tok.eos_token_id
        finish = "stop" if new and new[-1] == eos else "length"
        text = self.tok.decode(new, skip_special_tokens=True)
        return text, int(enc["input_ids"].shape[1]), len(new), finish

    def token_text(self, tid: int) -> str:
        """A token's text as vLLM reports it in ``top_logprobs``."""
        return self.tok.decode([int(tid)], skip_special_tokens=False)


class Faults:
    """Deterministic first-attempt faults by request-body hash."""

    KINDS = ("429", "500", "timeout", "malformed")

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()

    def reset(self, cfg: dict[str, Any]) -> None:
        """Replace the plan; every body counts as unseen again."""
        with self.lock:
            self.cfg = cfg
            self.seen = {}

    def pick(self, key: str) -> str | None:
        with self.lock:
            n = self.seen.get(key, 0)
            self.seen[key] = n + 1
        if n > 0:
            return None
        u = int(key[:8], 16) / 0xFFFFFFFF
        acc = 0.0
        for kind in self.KINDS:
            acc += float(self.cfg.get(kind, 0.0))
            if u < acc:
                return kind
        return None


def make_handler(
    model: LoopbackModel | None,
    served: str,
    api_key: str | None,
    faults: Faults,
    log_path: Path | None,
) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to one model."""
    log_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:
            log.debug(fmt, *args)

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(obj).encode(), headers)

        def _log(self, key: str, body: dict[str, Any], event: str, status: int) -> None:
            if log_path is None:
                return
            line = {
                "key": key,
                "image": _image_sha(body),
                "images": _image_count(body),
                "system": _system_text(_first_messages(body)),
                "event": event,
                "status": status,
                "arrived": self._arrived,
            }
            with log_lock, open(log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/health", "/v1/models"):
                self._json(200, {"status": "ok", "data": [{"id": served, "object": "model"}]})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            self._arrived = time.time()  # when the request reached the server (rate-limit tests)
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            batch = self.path.rstrip("/") == "/v1/chat/completions/batch"
            admin = self.path.rstrip("/") == "/admin/faults"
            if self.path.rstrip("/") != "/v1/chat/completions" and not (batch or admin):
                self._json(404, {"error": {"message": "not found"}})
                return
            if api_key is not None and self.headers.get("Authorization") != f"Bearer {api_key}":
                self._json(401, {"error": {"message": "invalid api key", "code": 401}})
                return
            if admin:
                faults.reset(json.loads(raw))
                self._json(200, {"faults": faults.cfg})
                return
            key = hashlib.sha256(raw).hexdigest()
            body = json.loads(raw)
            fault = faults.pick(key)
            if fault == "429":
                ra = str(faults.cfg.get("retry_after", 0.2))
                self._json(429, {"error": {"message": "rate limited"}}, {"Retry-After": ra})
                self._log(key, body, fault, 429)
                return
            if fault == "500":
                self._json(500, {"error": {"message": "internal error"}})
                self._log(key, body, fault, 500)
                return
            if fault == "timeout":
                time.sleep(float(faults.cfg.get("timeout_delay", 3.0)))
            if fault == "malformed":
                self._send(200, b'{"choices": [{"message": ')
                self._log(key, body, fault, 200)
                return
            try:
                if batch:
                    out = answer_batch(model, served, body, faults.cfg)
                else:
                    out = answer(model, served, body, faults.cfg)
            except Exception as exc:  # a bad request: 400 like vLLM
                self._json(400, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                return
            status = out.pop("_status", 200)
            with contextlib.suppress(OSError):  # a client that gave up (timeout fault)
                self._json(status, out)
            self._log(key, body, "late" if fault == "timeout" else "answered", status)

    return Handler


def _first_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of the request (of its first conversation on the batch endpoint)."""
    msgs = body.get("messages") or []
    return msgs[0] if msgs and isinstance(msgs[0], list) else msgs


def _user_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The user turn of a conversation (after a system message, if any)."""
    return next(m for m in messages if m.get("role") == "user")


def _system_text(messages: list[dict[str, Any]]) -> str:
    """The text of the conversation's system message ('' when it has none)."""
    for m in messages:
        if m.get("role") == "system":
            c = m.get("content")
            if isinstance(c, str):
                return c
            return "".join(p.get("text", "") for p in c or [] if isinstance(p, dict))
    return ""


def _image_sha(body: dict[str, Any]) -> str | None:
    for part in _user_message(_first_messages(body))["content"]:
        if part.get("type") == "image_url":
            url = part["image_url"]["url"]
            return hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest()
    return None


def _image_count(body: dict[str, Any]) -> int:
    """The number of image parts in the request's messages."""
    return sum(
        1
        for msg in _first_messages(body)
        if isinstance(msg.get("content"), list)
        for part in msg["content"]
        if part.get("type") == "image_url"
    )


def _planted(body: dict[str, Any], table: dict[str, Any]) -> list[list[Any]]:
    """The planted ``[token, logprob]`` list for the request's partial answer."""
    last = body["messages"][-1]
    partial = last["content"] if body.get("continue_final_message") else ""
    return list(table.get(partial, table.get("*", [])))


def _planted_answer(body: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The first planted answer matching the request's images and prompt text, or None."""
    shas, text = set(), ""
    for part in _user_message(body["messages"])["content"]:
        if part.get("type") == "image_url":
            url = part["image_url"]["url"]
            shas.add(hashlib.sha256(base64.b64decode(url.split(",", 1)[1])).hexdigest())
        elif part.get("type") == "text":
            text += part["text"]
    for entry in cfg.get("planted", []):
        if entry.get("image") in shas and str(entry.get("contains", "")) in text:
            return dict(entry)
    return None


def _planted_paths(
    body: dict[str, Any], cfg: dict[str, Any], k: int, n: int, max_tokens: int
) -> list[Path_]:
    """``n`` paths through the planted table: each position's token sampled from the planted
    list at the request's temperature (greedy at 0; the seed and the body fix the draws)."""
    import random

    table = cfg["planted_logprobs"]
    eos = set(cfg.get("eos", ["</s>"]))
    last = body["messages"][-1]
    start = last["content"] if body.get("continue_final_message") else ""
    t = float(body.get("temperature", 1.0))
    rng = random.Random(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest())
    out = []
    for _ in range(n):
        text, positions, finish = start, [], "length"
        for _ in range(max_tokens):
            lst = sorted(table.get(text, table.get("*", [])), key=lambda x: -float(x[1]))
            if not lst:
                break
            top = [
                {"token": str(a), "logprob": float(b), "bytes": list(str(a).encode())}
                for a, b in lst
            ]
            if t <= 0:
                pick = top[0]
            else:
                m = top[0]["logprob"]
                w = [math.exp((e["logprob"] - m) / t) for e in top]
                pick = rng.choices(top, weights=w)[0]
            positions.append({**pick, "top_logprobs": top[:k]})
            if pick["token"] in eos:
                finish = "stop"
                break
            text += pick["token"]
        out.append((positions, finish))
    return out


def _paths_response(
    model: LoopbackModel | None,
    base: dict[str, Any],
    body: dict[str, Any],
    cfg: dict[str, Any],
    n: int,
    max_tokens: int,
) -> dict[str, Any]:
    """A log-probability request for ``n`` choices of up to ``max_tokens`` tokens (vLLM's shape:
    ``choices[i].logprobs.content[j].top_logprobs`` at every generated position)."""
    k = int(body.get("top_logprobs") or 0)
    eos = set(cfg.get("eos", ["</s>"]))
    if cfg.get("planted_logprobs") is not None:
        paths, n_prompt = _planted_paths(body, cfg, k, n, max_tokens), 1
    elif model is not None:
        paths, n_prompt = model.paths(
            body["messages"],
            k,
            n,
            float(body.get("temperature", 1.0)),
            max_tokens,
            int(body.get("seed") or 0),
        )
        eos = {model.token_text(int(model.tok.eos_token_id))}
    else:
        raise ValueError("no model loaded and no planted log-probabilities for this request")
    choices, n_new = [], 0
    for i, (positions, finish) in enumerate(paths):
        text = "".join(p["token"] for p in positions if p["token"] not in eos)
        msg = {"role": "assistant", "content": text, "refusal": None}
        choices.append(
            {
                "index": i,
                "message": msg,
                "logprobs": {"content": positions},
                "finish_reason": finish,
                "stop_reason": None,
            }
        )
        n_new += len(positions)
    return _completion(base, choices, n_prompt, n_new)


def _completion(
    base: dict[str, Any], choices: list[dict[str, Any]], prompt: int, completion: int
) -> dict[str, Any]:
    """A chat-completion object with these choices and token counts."""
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return {**base, "choices": choices, "usage": usage}


def answer_batch(
    model: LoopbackModel | None, served: str, body: dict[str, Any], cfg: dict[str, Any]
) -> Any:
    """vLLM's ``/v1/chat/completions/batch``: ``messages`` is a list of conversations, each
    answered as by :func:`answer` (``n`` must be 1); choice ``i`` answers conversation ``i``."""
    convs = body.get("messages")
    if not isinstance(convs, list) or not all(isinstance(c, list) for c in convs):
        raise ValueError("messages must be a list of conversations")
    if int(body.get("n") or 1) != 1:
        raise ValueError("the batch endpoint takes n = 1")
    choices, prompt, completion = [], 0, 0
    for i, conv in enumerate(convs):
        out = answer(model, served, {**body, "messages": conv}, cfg)
        if "_status" in out:
            return out
        choices.append({**out["choices"][0], "index": i})
        prompt += out["usage"]["prompt_tokens"]
        completion += out["usage"]["completion_tokens"]
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served,
    }
    return _completion(base, choices, prompt, completion)


def answer(
    model: LoopbackModel | None, served: str, body: dict[str, Any], cfg: dict[str, Any]
) -> Any:
    """The chat-completion response object of one request."""
    sha = _image_sha(body)
    if sha in set(cfg.get("refuse_400_images", [])):
        return {
            "_status": 400,
            "error": {"message": "The response was filtered", "code": "content_filter"},
        }
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served,
    }
    if sha in set(cfg.get("refuse_images", [])):
        msg = {"role": "assistant", "content": None, "refusal": None}
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        choice = {"index": 0, "message": msg, "logprobs": None, "finish_reason": "content_filter"}
        return {**base, "choices": [choice], "usage": usage}
    planted_answer = _planted_answer(body, cfg)
    if planted_answer is not None:
        refusal = planted_answer.get("refusal")
        msg = {"role": "assistant", "content": planted_answer.get("content"), "refusal": refusal}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        choice = {
            "index": 0,
            "message": msg,
            "logprobs": None,
            "finish_reason": "stop",
            "stop_reason": None,
        }
        return {**base, "choices": [choice], "usage": usage}
    messages = body["messages"]
    n = int(body.get("n") or 1)
    max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 1)
    if body.get("logprobs") and (n > 1 or max_tokens > 1):
        return _paths_response(model, base, body, cfg, n, max_tokens)
    if body.get("logprobs") and cfg.get("planted_logprobs") is not None:
        k = int(body.get("top_logprobs") or 0)
        planted = sorted(_planted(body, cfg["planted_logprobs"]), key=lambda x: -float(x[1]))
        top = [
            {"token": str(t), "logprob": float(lp), "bytes": list(str(t).encode())}
            for t, lp in planted[: max(k, 1)]
        ]
        msg = {"role": "assistant", "content": top[0]["token"], "refusal": None}
        content = [{**top[0], "top_logprobs": top[:k]}]
        return {
            **base,
            "choices": [
                {
                    "index": 0,
                    "message": msg,
                    "logprobs": {"content": content},
                    "finish_reason": "length",
                    "stop_reason": None,
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    if model is None:
        raise ValueError("no model loaded and no planted answer matches this request")
    if body.get("logprobs"):
        k = int(body.get("top_logprobs") or 0)
        lp, n_prompt = model.next_logprobs(messages)
        vals, ids = lp.topk(max(k, 1))
        top = [
            {
                "token": model.token_text(i),
                "logprob": float(v),
                "bytes": list(model.token_text(i).encode()),
            }
            for v, i in zip(vals.tolist(), ids.tolist())
        ]
        first = top[0]
        tid = int(ids[0])
        msg = {"role": "assistant", "content": model.token_text(tid), "refusal": None}
        finish = "stop" if tid == model.tok.eos_token_id else "length"
        content = [{**first, "top_logprobs": top[:k]}]
        return {
            **base,
            "choices": [
                {
                    "index": 0,
                    "message": msg,
                    "logprobs": {"content": content},
                    "finish_reason": finish,
                    "stop_reason": None,
                }
            ],
            "usage": {
                "prompt_tokens": n_prompt,
                "completion_tokens": 1,
                "total_tokens": n_prompt + 1,
            },
        }
    text, n_prompt, n_new, finish = model.generate(
        messages,
        float(body.get("temperature", 1.0)),
        int(body.get("max_tokens", 16)),
        int(body.get("seed") or 0),
    )
    msg = {"role": "assistant", "content": text, "refusal": None}
    return {
        **base,
        "choices": [
            {
                "index": 0,
                "message": msg,
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": None,
            }
        ],
        "usage": {
            "prompt_tokens": n_prompt,
            "completion_tokens": n_new,
            "total_tokens": n_prompt + n_new,
        },
    }


class _Server(ThreadingHTTPServer):
    """A threading HTTP server whose listen backlog holds a client's whole connection pool:
    socketserver's default of 5 drops the SYNs of a client opening 8 connections at once, and
    each dropped one is retried by the kernel after a second."""

    allow_reuse_address = True
    request_queue_size = 128


def serve(
    model_dir: str | None,
    host: str,
    port: int,
    served: str,
    api_key: str | None,
    faults: dict[str, Any],
    log_path: str | None,
) -> None:
    """Load the model (if any) and serve until killed."""
    model = LoopbackModel(model_dir) if model_dir else None
    handler = make_handler(
        model, served, api_key, Faults(faults), Path(log_path) if log_path else None
    )
    srv = _Server((host, port), handler)
    srv.daemon_threads = True
    log.info("loopback server for %s on http://%s:%d/v1", served, host, port)
    srv.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="checkpoint directory (none: planted only)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--served-model", default="loopback")
    ap.add_argument("--api-key-env", default=None, help="require this env var's key as Bearer")
    ap.add_argument("--faults", default="{}", help="fault plan as JSON (see module doc)")
    ap.add_argument("--log", default=None, help="append answered requests to this JSONL file")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import os

    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    serve(
        args.model, args.host, args.port, args.served_model, key, json.loads(args.faults), args.log
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
