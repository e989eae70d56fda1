"""A protocol's image licence against the endpoint a model is judged on.

Some face sets may not be sent to API-based models (the Chicago Face Database and FACES, used by
*Beauty and the Bias*). A protocol says so in its file (``licence: {api_models: forbidden}``,
:class:`stylisticbias.benchmark.sections.LicenceSpec`); then a model whose endpoint
(``endpoint.base_url`` of an ``openai``-engine model) is not on the loopback or a private
network is refused before anything is sent, in one line naming the licence flag and the
override (``models.<name>.engine.allow_remote_licensed_images=true``, for images you may send).
Local engines (``hf``, ``simulated``) never send images anywhere.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError

OVERRIDE = "allow_remote_licensed_images"


def is_local_host(host: str) -> bool:
    """Whether ``host`` is on the loopback or a private (or link-local) network.

    An IP literal is classified directly; a name counts as local when every address it
    resolves to is (a name that does not resolve is not local).
    """
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        addrs = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None)
        except OSError:
            return False
        addrs = [ipaddress.ip_address(str(i[4][0]).split("%")[0]) for i in infos]
    return bool(addrs) and all(a.is_loopback or a.is_private or a.is_link_local for a in addrs)


def check_licence(model_cfg: Mapping[str, Any], benchmark: Benchmark) -> None:
    """Refuse a remote endpoint for a protocol whose images' licence forbids API models."""
    if not benchmark.licence.forbids_api:
        return
    endpoint = model_cfg.get("endpoint")
    if not isinstance(endpoint, Mapping) or not endpoint.get("base_url"):
        return  # a local engine: nothing leaves the machine
    engine = model_cfg.get("engine") or {}
    if bool(engine.get(OVERRIDE, False)):
        return
    base_url = str(endpoint["base_url"])
    if is_local_host(urlparse(base_url).hostname or ""):
        return
    name = model_cfg.get("name", "?")
    raise StylisticBiasError(
        f"{benchmark.source}: licence.api_models: forbidden -- model {name} would send this "
        f"protocol's images to {base_url}, which is not on the loopback or a private network"
        + (f" ({benchmark.licence.note})" if benchmark.licence.note else "")
        + f"; judge with a local engine or endpoint, or set models.{name}.engine.{OVERRIDE}=true"
        " for images you may send"
    )
