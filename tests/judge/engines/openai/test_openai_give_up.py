"""A served request that exhausts its retries on timeouts ends the run in one line.

The server (127.0.0.1) answers ``GET /models`` (the preflight) and two chat completions in
three after a short, varying delay; the third never answers, so its request times out twice and
gives up while others are in flight. A plain ``asyncio.gather`` then closed the client under
them and asyncio printed their tracebacks (~70 lines: "use Transport as an async context
manager") before the final line. Now the siblings are cancelled and awaited before the client
closes: stderr holds the stage's log lines and one final error line, no traceback.
"""

from __future__ import annotations

import http.server
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from judge_tables import make_tables

from stylisticbias.config import ROOT, load_group_option
from stylisticbias_dev.http_stub import answer, http_stub

MODEL = "tiny-llava-next-vllm"

DRIVER = """
import json, logging, sys
from stylisticbias.cli import setup_logging
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.run import run_judge
from stylisticbias.spec.parse import config_from_params

setup_logging()
params = json.loads(open(sys.argv[1]).read())
try:
    run_judge(sys.argv[2], config_from_params(params), progress=False)
except StylisticBiasError as exc:
    logging.getLogger("stylisticbias").error("error: %s", exc)
    sys.exit(2)
"""

COMPLETION = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "A"},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }
).encode()


def _models(h: http.server.BaseHTTPRequestHandler, stop: threading.Event) -> None:
    answer(h, json.dumps({"data": [{"id": "m"}]}).encode())


def _some_never_answer() -> object:
    counter = itertools.count()

    def post(h: http.server.BaseHTTPRequestHandler, stop: threading.Event) -> None:
        n = next(counter)
        h.rfile.read(int(h.headers["Content-Length"]))
        if n % 3 == 0:
            stop.wait(60)  # this one never answers: its request times out and gives up
            return
        time.sleep(0.15 * (n % 4))
        answer(h, COMPLETION)

    return post


# slow tier: a stage subprocess waiting out its retries (~8 CPU-s); fast sibling:
# tests/judge/engines/openai/test_openai_transport.py (retry and timeout handling)
@pytest.mark.slow
def test_exhausted_retries_on_timeouts_end_in_one_line_without_tracebacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with http_stub(get=_models, post=_some_never_answer()) as base:
        url = f"{base}/v1"
        monkeypatch.setenv("STYLISTICBIAS_LOOPBACK_URL", url)  # read by the model file
        monkeypatch.delenv("STYLISTICBIAS_LOOPBACK_KEY_ENV", raising=False)
        params = make_tables(tmp_path / "tables", 2, values_per_face=3)  # 8 images
        params["judge"].update(scenarios=[1, 2, 23], orderings=[1, 2, 3, 4], seeds=[1, 2])
        defaults = load_group_option("engine", "openai")
        transport = {
            **defaults["transport"],
            "concurrency": 8,
            "read_timeout_s": 0.5,
            "connect_timeout_s": 1.0,
            "max_retries": 1,
            "backoff_base_s": 0.05,
            "backoff_max_s": 0.1,
            "rpm": None,
            "tpm": None,
        }
        engine = {
            **defaults,
            "cache": str(tmp_path / "cache.sqlite"),
            "progress": False,
            "decoding": "exact",
            "image_batch_size": 4,
            "transport": transport,
        }
        params["models"] = {MODEL: {**load_group_option("model", MODEL), "engine": engine}}
        assert params["models"][MODEL]["endpoint"]["base_url"] == url
        (tmp_path / "params.json").write_text(json.dumps(params))
        proc = subprocess.run(
            [sys.executable, "-c", DRIVER, str(tmp_path / "params.json"), MODEL],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
    err = proc.stderr
    assert proc.returncode == 2, err
    assert "Traceback" not in err and "never retrieved" not in err and "Exception" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert all(ln.startswith(("INFO ", "WARNING ")) for ln in lines[:-1]), err
    final = lines[-1]
    assert final.startswith("ERROR stylisticbias: error: "), err
    assert "failed 2 time(s) (timeout" in final and "a rerun resumes" in final, final
