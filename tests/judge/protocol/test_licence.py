"""A protocol whose images' licence forbids API models refuses a remote endpoint in one line."""

from __future__ import annotations

import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.licence import check_licence, is_local_host


def _model(base_url: str | None, **engine: object) -> dict:
    cfg: dict = {"name": "api-model", "engine": {"name": "openai", **engine}}
    if base_url is not None:
        cfg["endpoint"] = {"base_url": base_url, "served_model": "x"}
    return cfg


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("::1", True),
        ("10.1.2.3", True),
        ("192.168.0.7", True),
        ("172.16.5.5", True),
        ("8.8.8.8", False),
        ("2001:4860:4860::8888", False),
        ("", False),
        ("no-such-host.invalid", False),
    ],
)
def test_local_hosts(host: str, local: bool) -> None:
    assert is_local_host(host) is local


def test_remote_api_is_refused_in_one_line_naming_the_flag() -> None:
    beauty = load_benchmark("beauty-and-the-bias")
    with pytest.raises(StylisticBiasError) as exc:
        check_licence(_model("https://8.8.8.8/v1"), beauty)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("conf/benchmark/beauty-and-the-bias.yaml: licence.api_models: forbidden")
    assert "models.api-model.engine.allow_remote_licensed_images=true" in msg


def test_local_endpoints_local_engines_overrides_and_other_protocols_pass() -> None:
    beauty = load_benchmark("beauty-and-the-bias")
    check_licence(_model("http://localhost:8000/v1"), beauty)
    check_licence(_model("http://10.0.0.5:8000/v1"), beauty)
    check_licence(_model(None), beauty)  # hf / simulated: nothing is sent
    check_licence(_model("https://8.8.8.8/v1", allow_remote_licensed_images=True), beauty)
    check_licence(_model("https://8.8.8.8/v1"), load_benchmark("stylisticbias"))


def test_make_engine_checks_the_licence_first() -> None:
    from stylisticbias.judge.engines.factory import make_engine

    cfg = _model("https://8.8.8.8/v1")
    cfg["_target_"] = "stylisticbias.judge.engines.simulated.engine.SimulatedJudgeEngine"
    with pytest.raises(StylisticBiasError, match=r"licence\.api_models: forbidden"):
        make_engine(cfg, {}, load_benchmark("beauty-and-the-bias"))
