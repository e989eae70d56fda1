"""A loopback server speaking OpenAI's Batch API shape, answering from planted answers.

For the tests of the ``openai`` engine's batch jobs (no internet, no model): it serves

* ``POST /v1/files`` (multipart, ``purpose: batch``) and ``GET /v1/files/{id}/content``;
* ``POST /v1/batches``, ``GET /v1/batches/{id}`` and ``GET /v1/batches`` (the list), each job
  going ``validating`` -> ``in_progress`` -> ``completed`` (or ``expired`` / ``failed``, as
  planted) one step per poll, with ``request_counts``, an output file (the answered lines) and
  an error file (failed and expired lines);
* ``POST /v1/chat/completions`` (online requests, answered the same way) and ``GET /v1/models``.

Answers come from :func:`stylisticbias_dev.openai_loopback.answer` without a model: planted
answers (``planted``), planted log-probability tables (``planted_logprobs``, e.g.
:func:`stylisticbias_dev.planted_answers.draw_tree`), refusals (``refuse_400_images``), and
``hash_answers``: a list of texts, one chosen by the request body's hash (a ``generate``
request no planted answer matches). Everything the server received is counted on the object
(``received``: lines per ``custom_id`` over all submitted jobs; ``online``: online requests;
``polls``: polls per job), so a test can check that nothing was asked twice.

Faults, set on the object: ``hold`` (jobs stay ``in_progress`` until cleared), ``expire``
(``{job number: lines answered before it expires}``, jobs counted from 1), ``fail`` (job
numbers that fail validation), ``in_progress_polls`` (polls a job stays in progress).

:func:`run_batch` answers an input file offline, as ``vllm run-batch -i IN -o OUT`` does.
CLI: ``python -m stylisticbias_dev.openai_batch_loopback serve --port N --faults JSON`` or
``... run-batch -i IN -o OUT --faults JSON``.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import hashlib
import json
import logging
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from stylisticbias_dev.openai_loopback import _planted_answer, answer

log = logging.getLogger(__name__)


def respond(body: dict[str, Any], cfg: dict[str, Any], served: str) -> dict[str, Any]:
    """The chat-completion object (``_status`` set for an error) answering ``body``."""
    texts = cfg.get("hash_answers")
    if texts and not body.get("logprobs") and _planted_answer(body, cfg) is None:
        h = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
        text = str(texts[h[0] % len(texts)])
        msg = {"role": "assistant", "content": text, "refusal": None}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served,
            "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102},
        }
    try:
        return dict(answer(None, served, body, cfg))
    except Exception as exc:  # a request nothing answers: a 400 like vLLM
        return {"_status": 400, "error": {"message": f"{type(exc).__name__}: {exc}"}}


def output_line(custom_id: str, out: dict[str, Any]) -> dict[str, Any]:
    """One output-file line (the Batch API's and ``vllm run-batch``'s shape)."""
    status = int(out.pop("_status", 200))
    return {
        "id": f"batch_req_{uuid.uuid4().hex}",
        "custom_id": custom_id,
        "response": {"status_code": status, "request_id": uuid.uuid4().hex, "body": out},
        "error": None,
    }


def run_batch(
    in_path: str | Path, out_path: str | Path, cfg: dict[str, Any], served: str = "loopback"
) -> int:
    """Answer every line of a batch input file into an output file (``vllm run-batch``'s
    shape: answered and failed lines in one file); returns the number of lines."""
    n = 0
    with open(in_path, encoding="utf-8") as src, open(out_path, "w", encoding="utf-8") as dst:
        for line in src:
            if not line.strip():
                continue
            req = json.loads(line)
            out = respond(req["body"], cfg, served)
            dst.write(json.dumps(output_line(req["custom_id"], out)) + "\n")
            n += 1
    return n


class BatchLoopback:
    """The server (``start()`` in a thread of this process, ``stop()``); see the module doc."""

    def __init__(
        self,
        cfg: dict[str, Any] | None = None,
        served: str = "loopback",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.cfg = dict(cfg or {})
        self.served = served
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.received: Counter[str] = Counter()
        self.online: Counter[str] = Counter()
        self.polls: Counter[str] = Counter()
        self.hold = False
        self.expire: dict[int, int] = {}
        self.fail: set[int] = set()
        self.in_progress_polls = 1
        self.submitted = threading.Event()  # set when a job is created
        self.lock = threading.Lock()
        self._srv = _Server((host, port), _handler(self))
        self._srv.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL (``http://127.0.0.1:PORT/v1``)."""
        host, port = self._srv.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> BatchLoopback:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._srv.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._srv.shutdown()
        self._srv.server_close()

    def __enter__(self) -> BatchLoopback:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- the API -----------------------------------------------------------------------------
    def add_file(self, data: bytes, purpose: str) -> dict[str, Any]:
        """Store an uploaded file."""
        fid = f"file-{uuid.uuid4().hex[:24]}"
        with self.lock:
            self.files[fid] = data
        return {"id": fid, "object": "file", "bytes": len(data), "purpose": purpose}

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create a job on an uploaded file; its lines are counted as received."""
        fid = body.get("input_file_id")
        if fid not in self.files:
            return {"_status": 404, "error": {"message": f"no file {fid}"}}
        lines = [json.loads(x) for x in self.files[fid].decode().splitlines() if x.strip()]
        with self.lock:
            number = len(self.batches) + 1
            bid = f"batch_{uuid.uuid4().hex[:24]}"
            self.received.update(str(x["custom_id"]) for x in lines)
            self.batches[bid] = {
                "id": bid,
                "object": "batch",
                "endpoint": body.get("endpoint"),
                "input_file_id": fid,
                "completion_window": body.get("completion_window"),
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "metadata": body.get("metadata"),
                "errors": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "_number": number,
                "_lines": lines,
                "_in_progress": 0,
            }
        self.submitted.set()
        return self._public(self.batches[bid])

    def poll(self, bid: str) -> dict[str, Any]:
        """The job's state, advanced one step."""
        with self.lock:
            b = self.batches.get(bid)
            if b is None:
                return {"_status": 404, "error": {"message": f"no batch {bid}"}}
            self.polls[bid] += 1
            if b["status"] == "validating":
                if b["_number"] in self.fail:
                    b["status"] = "failed"
                    b["errors"] = {"data": [{"code": "invalid_request", "message": "planted"}]}
                else:
                    b["status"] = "in_progress"
            elif b["status"] == "in_progress" and not self.hold:
                b["_in_progress"] += 1
                if b["_in_progress"] >= self.in_progress_polls:
                    self._finish(b)
            return self._public(b)

    def _finish(self, b: dict[str, Any]) -> None:
        lines = b["_lines"]
        answer_n = self.expire.get(b["_number"], len(lines))
        out, err = [], []
        for i, line in enumerate(lines):
            if i >= answer_n:
                err.append(
                    {
                        "id": f"batch_req_{uuid.uuid4().hex}",
                        "custom_id": line["custom_id"],
                        "response": None,
                        "error": {
                            "code": "batch_expired",
                            "message": "This request could not be executed before "
                            "the completion window expired.",
                        },
                    }
                )
                continue
            o = output_line(line["custom_id"], respond(line["body"], self.cfg, self.served))
            (out if o["response"]["status_code"] == 200 else err).append(o)
        for key, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                data = "".join(json.dumps(r) + "\n" for r in rows).encode()
                fid = f"file-{uuid.uuid4().hex[:24]}"
                self.files[fid] = data
                b[key] = fid
        b["status"] = "expired" if answer_n < len(lines) else "completed"
        ok = sum(1 for r in out)
        b["request_counts"] = {"total": len(lines), "completed": ok, "failed": len(lines) - ok}

    @staticmethod
    def _public(b: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in b.items() if not k.startswith("_")}


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True
    request_queue_size = 128


def _multipart(ctype: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body."""
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {ctype}\r\n\r\n".encode() + raw
    )
    out = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[str(name)] = part.get_payload(decode=True) or b""
    return out


def _handler(server: BatchLoopback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:
            log.debug(fmt, *args)

        def _json(self, obj: dict[str, Any]) -> None:
            status = int(obj.pop("_status", 200))
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            if path in ("/health", "/v1/models"):
                self._json({"data": [{"id": server.served, "object": "model"}]})
            elif path == "/v1/batches":
                with server.lock:
                    data = [server._public(b) for b in server.batches.values()]
                self._json({"object": "list", "data": data})
            elif path.startswith("/v1/batches/"):
                self._json(server.poll(path.rsplit("/", 1)[1]))
            elif path.startswith("/v1/files/") and path.endswith("/content"):
                data = server.files.get(path.split("/")[3])
                if data is None:
                    self._json({"_status": 404, "error": {"message": "no such file"}})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/jsonl")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            else:
                self._json({"_status": 404, "error": {"message": "not found"}})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            path = self.path.split("?", 1)[0].rstrip("/")
            if path == "/v1/files":
                fields = _multipart(self.headers.get("Content-Type", ""), raw)
                self._json(
                    server.add_file(fields.get("file", b""), fields.get("purpose", b"").decode())
                )
            elif path == "/v1/batches":
                self._json(server.create(json.loads(raw)))
            elif path == "/v1/chat/completions":
                body = json.loads(raw)
                with server.lock:
                    server.online[hashlib.sha256(raw).hexdigest()] += 1
                self._json(respond(body, server.cfg, server.served))
            else:
                self._json({"_status": 404, "error": {"message": "not found"}})

    return Handler


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    srv = sub.add_parser("serve")
    srv.add_argument("--port", type=int, default=8002)
    srv.add_argument("--served-model", default="loopback")
    srv.add_argument("--faults", default="{}", help="planted answers etc. as JSON")
    rb = sub.add_parser("run-batch", help="answer an input file offline (vllm run-batch)")
    rb.add_argument("-i", "--input", required=True)
    rb.add_argument("-o", "--output", required=True)
    rb.add_argument("--served-model", default="loopback")
    rb.add_argument("--faults", default="{}")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cfg = json.loads(args.faults)
    if args.cmd == "run-batch":
        n = run_batch(args.input, args.output, cfg, args.served_model)
        log.info("%d line(s) answered into %s", n, args.output)
        return 0
    s = BatchLoopback(cfg, args.served_model, port=args.port)
    log.info("batch loopback server on %s", s.url)
    s._srv.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
