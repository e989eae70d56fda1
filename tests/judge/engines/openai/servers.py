"""Start/stop the local servers the openai-engine tests talk to (127.0.0.1 only)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2

from stylisticbias_dev import tiny

ROOT = Path(__file__).resolve().parents[4]
TINY = ROOT / "tests" / ".tiny_models" / "llava_next"


def tiny_llava() -> Path:
    """The tiny LLaVA-NeXT checkpoint (built once, shared with the hf tests)."""
    return tiny.ensure_built("llava_next", TINY)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[Any], timeout: float = 240.0) -> None:
    """Poll ``url`` until it answers 200 (fails if the process exits first)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx2.get(url, timeout=2.0).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{url} not healthy after {timeout:.0f}s")


def start_loopback(
    port: int,
    *,
    faults: dict[str, Any] | None = None,
    log: Path | None = None,
    api_key_env: str | None = None,
    out: Path | None = None,
    with_model: bool = True,
) -> subprocess.Popen[Any]:
    """The vLLM-shaped loopback server on ``port`` (waits until healthy).

    ``with_model=False``: no checkpoint is loaded; only planted answers (``faults["planted"]``)
    are given.
    """
    model = ["--model", str(tiny_llava())] if with_model else []
    cmd = [
        sys.executable,
        "-m",
        "stylisticbias_dev.openai_loopback",
        *model,
        "--port",
        str(port),
        "--served-model",
        "tiny-llava-next",
        "--faults",
        json.dumps(faults or {}),
    ]
    if log is not None:
        cmd += ["--log", str(log)]
    if api_key_env is not None:
        cmd += ["--api-key-env", api_key_env]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    stdout = open(out, "ab") if out else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(
        cmd, env=env, stdout=stdout, stderr=subprocess.STDOUT, start_new_session=True
    )
    wait_healthy(f"http://127.0.0.1:{port}/health", proc)
    return proc


def set_faults(url: str, faults: dict[str, Any], api_key: str | None = None) -> None:
    """Replace the fault plan of the running loopback server at ``url`` (``.../v1`` or its
    root); it forgets which request bodies it has seen."""
    root = url.removesuffix("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    resp = httpx2.post(f"{root}/admin/faults", json=faults, headers=headers, timeout=10.0)
    resp.raise_for_status()


def start_transformers_serve(port: int) -> subprocess.Popen[Any]:
    """``transformers serve`` of the tiny checkpoint on ``port`` (waits until healthy)."""
    exe = Path(sys.executable).with_name("transformers")
    cmd = [
        str(exe),
        "serve",
        str(tiny_llava()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--dtype",
        "float32",
        "--log-level",
        "warning",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    wait_healthy(f"http://127.0.0.1:{port}/health", proc)
    return proc


def stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM) -> None:
    """Stop a server started here (its own process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


def events(log: Path) -> list[dict[str, Any]]:
    """Every request the loopback server handled (answered or faulted)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def answered(log: Path) -> list[dict[str, Any]]:
    """The requests the loopback server answered in time."""
    return [e for e in events(log) if e["event"] == "answered"]
