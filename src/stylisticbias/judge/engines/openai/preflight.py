"""The served model's preflight: its API key is set and its endpoint answers, checked in
seconds before the judge stage creates any output (``OpenAIJudgeEngine.check_runnable``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.openai.spec import endpoint_spec

#: seconds allowed for the endpoint to answer
PROBE_TIMEOUT_S = 4.0


def check_served_endpoint(model_cfg: Mapping[str, Any]) -> None:
    """The API key is set and the endpoint answers (``GET {base_url}/models``)."""
    ep = endpoint_spec(model_cfg)
    key = ep.api_key()  # a missing key is a one-line error naming the variable
    headers = dict(ep.headers)
    if key:
        headers["api-key" if ep.backend == "azure" else "Authorization"] = (
            key if ep.backend == "azure" else f"Bearer {key}"
        )
    import httpx2

    try:
        status = httpx2.get(
            ep.base_url.rstrip("/") + "/models",
            headers=headers,
            timeout=PROBE_TIMEOUT_S,
            follow_redirects=True,
        ).status_code
    except httpx2.HTTPError as exc:
        raise StylisticBiasError(
            f"{ep.source}: endpoint {ep.base_url} does not answer ({type(exc).__name__}); start "
            "the server or fix endpoint.base_url (a served model is judged only while its "
            "server runs)"
        ) from None
    if status == 401:
        raise StylisticBiasError(
            f"{ep.source}: endpoint {ep.base_url} refused the key in "
            f"{ep.api_key_env or '(none)'} (HTTP {status}); check the key and its permissions"
        )
