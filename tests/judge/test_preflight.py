"""Fail fast on what cannot run: hub weights neither cached nor reachable, a served endpoint
without its key or not answering -- one line, within seconds, before the judge stage touches its
output; a large checkpoint on the CPU gets a warning with the expected time."""

from __future__ import annotations

import json
import logging
import socket
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from huggingface_hub import constants
from safetensors.numpy import save_file

from stylisticbias.config import load_group_option, load_params
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.hf import preflight
from stylisticbias.judge.engines.openai import preflight as served_preflight
from stylisticbias.judge.run import run_judge
from stylisticbias.spec.parse import config_from_params

PAPER_MODEL = "qwen3-vl-8b"
SERVED = "tiny-llava-next-vllm"
REV = "0123456789abcdef0123456789abcdef01234567"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the socket is: nobody listens


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache, a hub nobody answers at, and no offline flag."""
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    return cache


def _snapshot(cache: Path, hub_id: str, files: dict[str, bytes]) -> Path:
    """A Hugging Face cache entry of ``hub_id`` at revision ``main`` holding ``files``."""
    repo = cache / f"models--{hub_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(REV)
    snap = repo / "snapshots" / REV
    snap.mkdir(parents=True)
    for name, data in files.items():
        (snap / name).write_bytes(data)
    return snap


def _config(tmp_path: Path, model: str) -> Any:
    params = load_params()
    params["models"] = {model: load_group_option("model", model)}
    params["paths"] = {**params["paths"], "faces": str(tmp_path / "no-faces")}
    return config_from_params(params)


def _one_line(exc: pytest.ExceptionInfo[StylisticBiasError]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def _count_gets(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float]]:
    """Record every ``httpx2.get`` (URL, timeout) the preflights make; each still runs."""
    import httpx2

    calls: list[tuple[str, float]] = []
    real = httpx2.get

    def get(url: str, *args: Any, **kwargs: Any) -> Any:
        calls.append((str(url), kwargs.get("timeout")))
        return real(url, *args, **kwargs)

    monkeypatch.setattr(httpx2, "get", get)
    return calls


def test_missing_hub_weights_no_network_one_line_fast_nothing_touched(
    tmp_path: Path, empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "j" / PAPER_MODEL
    gets = _count_gets(monkeypatch)
    with pytest.raises(StylisticBiasError) as exc:
        run_judge(PAPER_MODEL, _config(tmp_path, PAPER_MODEL), progress=False, out_dir=out)
    # fast by construction: one probe of the hub, bounded by PROBE_TIMEOUT_S, then the error
    # (not minutes of the hub client's retries)
    assert len(gets) == 1 and gets[0][1] == preflight.PROBE_TIMEOUT_S, gets
    assert "/api/models/Qwen/Qwen3-VL-8B-Instruct/revision/main" in gets[0][0], gets
    msg = _one_line(exc)
    for part in (
        "conf/model/qwen3-vl-8b.yaml",
        "Qwen/Qwen3-VL-8B-Instruct",
        "cannot be reached",
        "hf download Qwen/Qwen3-VL-8B-Instruct --revision main",
        "HF_HUB_OFFLINE",
        "local_build",
    ):
        assert part in msg, (part, msg)
    assert not out.parent.exists()


def test_offline_flag_fails_without_probing(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(preflight, "probe", lambda *a, **k: pytest.fail("probed offline"))
    with pytest.raises(StylisticBiasError, match="HF_HUB_OFFLINE is set") as exc:
        preflight.check_hf_weights(load_group_option("model", PAPER_MODEL))
    assert "hf download" in _one_line(exc)


def test_cached_weights_pass_offline_and_count_parameters(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = load_group_option("model", PAPER_MODEL)
    weights = {"a": np.zeros((3, 4), np.float32), "b": np.zeros(5, np.float32)}
    save_file(weights, str(tmp_path / "w.safetensors"))
    _snapshot(
        empty_cache,
        cfg["hub_id"],
        {"config.json": b"{}", "model.safetensors": (tmp_path / "w.safetensors").read_bytes()},
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    preflight.check_hf_weights(cfg)  # no error
    assert preflight.checkpoint_parameters(cfg) == 17
    # a config without weights is not enough
    other = {**cfg, "hub_id": "org/config-only"}
    _snapshot(empty_cache, "org/config-only", {"config.json": b"{}"})
    with pytest.raises(StylisticBiasError, match="not in the Hugging Face cache"):
        preflight.check_hf_weights(other)


def _header_only_safetensors(n_params: int) -> bytes:
    """A safetensors header declaring ``n_params`` bf16 parameters (the data is not needed to
    count them)."""
    header = json.dumps(
        {
            "w": {
                "dtype": "BF16",
                "shape": [n_params // 4096, 4096],
                "data_offsets": [0, 2 * n_params],
            }
        }
    ).encode()
    return struct.pack("<Q", len(header)) + header


def test_large_checkpoint_on_cpu_warns_with_expected_time(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = load_group_option("model", PAPER_MODEL)
    _snapshot(
        empty_cache,
        cfg["hub_id"],
        {"config.json": b"{}", "model.safetensors": _header_only_safetensors(8 * 4096 * 250_000)},
    )
    monkeypatch.setattr(preflight, "cpu_matmul_flops", lambda: 1e11)
    engine = {**cfg["engine"], "lightning": {**cfg["engine"]["lightning"], "accelerator": "cpu"}}
    with caplog.at_level(logging.WARNING, logger="stylisticbias.judge.preflight"):
        per_image = preflight.warn_cpu(cfg, engine, n_prompts=100, n_images=50)
    # 2 x 8.19e9 parameters x (1024 + 100 x 40) tokens / 1e11 FLOP/s
    assert per_image == pytest.approx(2 * 8.192e9 * 5024 / 1e11)
    text = caplog.text
    assert "8.2B parameters on accelerator cpu" in text and f"~{per_image:.0f} s per image" in text
    assert "for 50 images" in text
    gpu = {**engine, "device": "cuda", "lightning": {**engine["lightning"], "accelerator": "gpu"}}
    assert preflight.warn_cpu(cfg, gpu) is None  # on a GPU: no warning


def test_served_model_without_key_or_answer_fails_before_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STYLISTICBIAS_LOOPBACK_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    monkeypatch.setenv("STYLISTICBIAS_LOOPBACK_KEY_ENV", "STYLISTICBIAS_TEST_NO_SUCH_KEY")
    monkeypatch.delenv("STYLISTICBIAS_TEST_NO_SUCH_KEY", raising=False)
    out = tmp_path / "j" / SERVED
    with pytest.raises(StylisticBiasError, match="STYLISTICBIAS_TEST_NO_SUCH_KEY") as exc:
        run_judge(SERVED, _config(tmp_path, SERVED), progress=False, out_dir=out)
    _one_line(exc)
    monkeypatch.setenv("STYLISTICBIAS_TEST_NO_SUCH_KEY", "sk-test")
    gets = _count_gets(monkeypatch)
    with pytest.raises(StylisticBiasError, match="does not answer") as exc:
        run_judge(SERVED, _config(tmp_path, SERVED), progress=False, out_dir=out)
    # one GET of {base_url}/models, bounded by the served preflight's PROBE_TIMEOUT_S
    assert len(gets) == 1 and gets[0][0].endswith("/v1/models"), gets
    assert gets[0][1] == served_preflight.PROBE_TIMEOUT_S, gets
    assert "conf/model/tiny-llava-next-vllm.yaml" in _one_line(exc)
    assert not out.parent.exists()
