"""GeminiGenerator against a local HTTP server that answers in the real REST shapes.

Imagen (Vertex AI ``:predict``): ``{"predictions": [{"bytesBase64Encoded", "mimeType"}]}`` or
``[{"raiFilteredReason": ...}]``. Gemini (``:generateContent``):
``{"candidates": [{"content": {"parts": [{"inlineData": {...}}|{"text": ...}]}, "finishReason"}]}``
or ``{"promptFeedback": {"blockReason": ...}}``. Errors: ``{"error": {"code", "message",
"status"}}`` with the matching HTTP status.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from PIL import Image

from stylisticbias.errors import StylisticBiasError
from stylisticbias.generators.base import EditSpec, FaceSpec
from stylisticbias.generators.gemini_backend import GeminiGenerator

pytest.importorskip("google.genai")

SECRET = "sb-test-SECRET-key-9f8e7d"


def png_b64(color: tuple[int, int, int], size: tuple[int, int] = (24, 24)) -> str:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def imagen_ok(color=(200, 10, 10)) -> tuple[int, dict]:
    return 200, {"predictions": [{"bytesBase64Encoded": png_b64(color), "mimeType": "image/png"}]}


def content_ok(color=(10, 200, 10), size=(24, 24)) -> tuple[int, dict]:
    part = {"inlineData": {"mimeType": "image/png", "data": png_b64(color, size)}}
    return 200, {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]
    }


def api_error(code: int, status: str, message: str) -> tuple[int, dict]:
    return code, {"error": {"code": code, "message": message, "status": status}}


class FakeGoogleAPI:
    """Scripted answers per endpoint kind (``predict`` / ``generateContent``); records requests."""

    def __init__(self) -> None:
        self.script: dict[str, deque[tuple[int, dict]]] = {
            "predict": deque(),
            "generateContent": deque(),
        }
        self.default: dict[str, tuple[int, dict]] = {
            "predict": imagen_ok(),
            "generateContent": content_ok(),
        }
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                kind = (
                    "predict"
                    if self.path.split("?")[0].endswith(":predict")
                    else (
                        "generateContent"
                        if self.path.split("?")[0].endswith(":generateContent")
                        else "unknown"
                    )
                )
                with api.lock:
                    api.requests.append(
                        {
                            "path": self.path,
                            "kind": kind,
                            "headers": dict(self.headers),
                            "body": body,
                        }
                    )
                    if kind == "unknown":
                        code, payload = api_error(404, "NOT_FOUND", f"no route {self.path}")
                    elif api.script[kind]:
                        code, payload = api.script[kind].popleft()
                    else:
                        code, payload = api.default[kind]
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def count(self, kind: str) -> int:
        return sum(r["kind"] == kind for r in self.requests)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api():
    server = FakeGoogleAPI()
    yield server
    server.stop()


@pytest.fixture
def make_gen(api, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)

    def make(**kw: Any) -> GeminiGenerator:
        opts = dict(
            base_url=api.base_url,
            max_retries=3,
            backoff_initial_s=0.01,
            backoff_max_s=0.05,
            backoff_jitter_s=0.01,
            timeout_s=10,
            concurrency=2,
        )
        opts.update(kw)
        return GeminiGenerator(**opts)

    return make


def face(i: int, seed: int | None = None) -> FaceSpec:
    return FaceSpec(
        f"f{i}", "young adult", "female", "Asian", "thin", seed or 100 + i, f"prompt {i}"
    )


@pytest.fixture
def variations():
    from stylisticbias.benchmark import VariationValue

    face_v = VariationValue(
        "Eyewear",
        "eyewear",
        "Eyewear",
        "Sunglasses",
        "sunglasses",
        "Sunglasses",
        "all",
        "face",
        True,
    )
    body_v = VariationValue(
        "Fashion style",
        "fashion_style",
        "Fashion",
        "Casual",
        "casual",
        "Casual",
        "all",
        "full_body",
        True,
    )
    return face_v, body_v


def test_base_faces_happy_path(api, make_gen):
    gen = make_gen()
    specs = [face(1), face(2), face(3)]
    res = gen.generate_faces(specs)
    assert [r.status for r in res] == ["ok"] * 3
    assert all(r.image is not None and r.image.size == (24, 24) for r in res)
    assert res[0].image.getpixel((0, 0)) == (200, 10, 10)
    reqs = [r for r in api.requests if r["kind"] == "predict"]
    assert len(reqs) == 3
    assert all("imagen-4.0-generate-001:predict" in r["path"] for r in reqs)
    prompts = sorted(r["body"]["instances"][0]["prompt"] for r in reqs)
    assert prompts == ["prompt 1", "prompt 2", "prompt 3"]  # exactly as given
    assert all(r["body"]["parameters"]["sampleCount"] == 1 for r in reqs)
    assert all(r["body"]["parameters"]["includeRaiReason"] is True for r in reqs)
    assert all(r["headers"].get("x-goog-api-key") == SECRET for r in reqs)


def test_edits_happy_path_sends_prompt_and_base_image(api, make_gen, variations):
    gen = make_gen()
    base = Image.new("RGB", (24, 24), (1, 2, 3))
    fv, bv = variations
    edits = [EditSpec(face(1), fv, "edit prompt A", 7), EditSpec(face(1), bv, "edit prompt B", 8)]
    res = gen.edit(base, edits)
    assert [r.status for r in res] == ["ok", "ok"]
    assert res[0].image.getpixel((0, 0)) == (10, 200, 10)
    reqs = [r for r in api.requests if r["kind"] == "generateContent"]
    assert len(reqs) == 2
    assert all("gemini-2.5-flash-image:generateContent" in r["path"] for r in reqs)
    by_prompt = {}
    for r in reqs:
        parts = r["body"]["contents"][0]["parts"]
        assert parts[0]["text"] in ("edit prompt A", "edit prompt B")
        sent = Image.open(io.BytesIO(base64.urlsafe_b64decode(parts[1]["inlineData"]["data"])))
        assert sent.convert("RGB").getpixel((0, 0)) == (1, 2, 3)  # the base image
        by_prompt[parts[0]["text"]] = r["body"]["generationConfig"]
    assert by_prompt["edit prompt A"]["seed"] == 7
    assert by_prompt["edit prompt B"]["seed"] == 8
    assert by_prompt["edit prompt A"]["responseModalities"] == ["IMAGE"]


def test_429_then_success_is_retried(api, make_gen, variations):
    gen = make_gen(concurrency=1)
    api.script["predict"].extend(
        [api_error(429, "RESOURCE_EXHAUSTED", "quota"), api_error(503, "UNAVAILABLE", "busy")]
    )
    res = gen.generate_faces([face(1)])
    assert res[0].status == "ok"
    assert api.count("predict") == 3
    api.script["generateContent"].append(api_error(500, "INTERNAL", "oops"))
    res = gen.edit(Image.new("RGB", (8, 8)), [EditSpec(face(1), variations[0], "p", 1)])
    assert res[0].status == "ok"
    assert api.count("generateContent") == 2


def test_retries_exhausted_is_an_error_result(api, make_gen):
    gen = make_gen(max_retries=2, concurrency=1)
    api.script["predict"].extend([api_error(429, "RESOURCE_EXHAUSTED", "quota")] * 3)
    res = gen.generate_faces([face(1)])
    assert res[0].status == "error" and res[0].image is None
    assert "429" in res[0].reason and "3 attempts" in res[0].reason
    assert api.count("predict") == 3


def test_imagen_rai_filter_is_blocked(api, make_gen):
    gen = make_gen(concurrency=1)
    reason = "Unable to show generated images. (Support codes: 58061214)"
    api.script["predict"].append((200, {"predictions": [{"raiFilteredReason": reason}]}))
    api.script["predict"].append((200, {}))
    res = gen.generate_faces([face(1), face(2)])
    assert res[0].status == "blocked" and reason in res[0].reason
    assert res[1].status == "blocked" and "no image" in res[1].reason


def test_safety_blocks_are_blocked_with_reason(api, make_gen, variations):
    gen = make_gen(concurrency=1)
    api.script["generateContent"].extend(
        [
            (200, {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}),
            (
                200,
                {
                    "candidates": [
                        {"finishReason": "IMAGE_SAFETY", "finishMessage": "image flagged"}
                    ]
                },
            ),
        ]
    )
    base = Image.new("RGB", (8, 8))
    edits = [EditSpec(face(1), variations[1], "p1", 1), EditSpec(face(1), variations[1], "p2", 2)]
    res = gen.edit(base, edits)
    assert [r.status for r in res] == ["blocked", "blocked"]
    assert "PROHIBITED_CONTENT" in res[0].reason
    assert "IMAGE_SAFETY" in res[1].reason and "image flagged" in res[1].reason


def test_text_only_answer_is_refused(api, make_gen, variations):
    gen = make_gen(concurrency=1)
    text = "I can't help with editing this image."
    api.script["generateContent"].append(
        (
            200,
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": text}]},
                        "finishReason": "STOP",
                    }
                ]
            },
        )
    )
    res = gen.edit(Image.new("RGB", (8, 8)), [EditSpec(face(1), variations[0], "p", 1)])
    assert res[0].status == "refused" and res[0].image is None
    assert "STOP" in res[0].reason and text in res[0].reason


def test_order_kept_with_concurrency(api, make_gen):
    gen = make_gen(concurrency=4)
    api.default["predict"] = imagen_ok((5, 5, 5))
    res = gen.generate_faces([face(i) for i in range(8)])
    assert len(res) == 8 and all(r.status == "ok" for r in res)


def test_missing_key_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StylisticBiasError, match=r"^gemini generator: set GEMINI_API_KEY"):
        GeminiGenerator()
    assert list(tmp_path.iterdir()) == []  # nothing written
    with pytest.raises(StylisticBiasError, match="MY_KEY"):
        GeminiGenerator(api_key_env="MY_KEY")


def test_imagen_needs_vertex(make_gen):
    with pytest.raises(StylisticBiasError, match="Vertex AI"):
        make_gen(vertexai=False)


def test_rejected_key_raises_without_leaking(api, make_gen):
    gen = make_gen(concurrency=1)
    api.script["predict"].append(
        api_error(
            400, "INVALID_ARGUMENT", f"API key not valid. Please pass a valid API key. {SECRET}"
        )
    )
    with pytest.raises(StylisticBiasError) as info:
        gen.generate_faces([face(1)])
    assert SECRET not in str(info.value) and "[redacted]" in str(info.value)


def test_key_never_logged_or_in_reasons(api, make_gen, variations, caplog):
    caplog.set_level(logging.DEBUG)
    gen = make_gen(concurrency=1)
    api.script["predict"].append(api_error(429, "RESOURCE_EXHAUSTED", f"quota for {SECRET}"))
    api.script["generateContent"].extend(
        [
            (200, {"promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": SECRET}}),
            api_error(400, "INVALID_ARGUMENT", f"bad request {SECRET}"),
        ]
    )
    res = gen.generate_faces([face(1)])
    res += gen.edit(
        Image.new("RGB", (8, 8)),
        [EditSpec(face(1), variations[0], "p", 1), EditSpec(face(1), variations[0], "q", 2)],
    )
    assert [r.status for r in res] == ["ok", "blocked", "error"]
    assert all(SECRET not in (r.reason or "") for r in res)
    assert caplog.records, "expected the retry to be logged"
    assert SECRET not in caplog.text
    assert SECRET not in repr(gen.describe())


def test_gemini_image_model_as_base_uses_generate_content(api, make_gen):
    gen = make_gen(vertexai=False, base_model="gemini-2.5-flash-image")
    res = gen.generate_faces([face(1, seed=42)])
    assert res[0].status == "ok" and res[0].image.size == (24, 24)
    (req,) = api.requests
    assert req["path"].endswith("models/gemini-2.5-flash-image:generateContent")
    assert req["body"]["contents"][0]["parts"] == [{"text": "prompt 1"}]
    assert req["body"]["generationConfig"]["seed"] == 42
    assert req["headers"].get("x-goog-api-key") == SECRET


def test_full_body_aspect_ratio_only_for_fashion(api, make_gen, variations):
    gen = make_gen(concurrency=1, full_body_aspect_ratio="2:3")
    fv, bv = variations
    gen.edit(
        Image.new("RGB", (8, 8)), [EditSpec(face(1), fv, "a", 1), EditSpec(face(1), bv, "b", 2)]
    )
    cfgs = [r["body"]["generationConfig"] for r in api.requests]
    assert "imageConfig" not in cfgs[0]
    assert cfgs[1]["imageConfig"]["aspectRatio"] == "2:3"


def test_config_instantiates_like_the_builder(monkeypatch):
    from stylisticbias.config import load_group_option
    from stylisticbias.dataset.rendering import BUILDER_KEYS, make_generator

    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    cfg = load_group_option("generator", "gemini")
    cfg.pop("name")
    gen = make_generator({k: v for k, v in cfg.items() if k not in BUILDER_KEYS})
    assert isinstance(gen, GeminiGenerator) and gen.file_format == "jpg"
    assert SECRET not in repr(cfg)
    gen.close()
