"""The hf engine's preflight (``HFJudgeEngine.check_runnable``), before the judge stage
touches its output.

A hub checkpoint whose weights are neither in the Hugging Face cache nor reachable fails in one
line within seconds (instead of minutes of hub retries), naming the checkpoint and what to do:
the download command, ``HF_HUB_OFFLINE``, a local ``hub_id`` or ``local_build``. A large
checkpoint (>= :data:`LARGE_PARAMS` parameters) that will run on the CPU gets a warning with the
expected time (:func:`cpu_seconds_per_image`).

Nothing here imports torch or transformers unless a large checkpoint is on disk and may run on
the CPU.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)

#: seconds allowed for each reachability probe (hub, served endpoint)
PROBE_TIMEOUT_S = 4.0
#: checkpoints at least this large get the CPU warning
LARGE_PARAMS = 7.5e9
#: weight files of a checkpoint, any one of which makes it loadable
WEIGHT_FILES = (
    "model.safetensors.index.json",
    "model.safetensors",
    "pytorch_model.bin.index.json",
    "pytorch_model.bin",
)
_TRUE = {"1", "true", "yes", "on"}


def _offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in _TRUE
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def cached_weights(
    hub_id: str, revision: str | None, cache_dir: str | Path | None = None
) -> str | None:
    """Path of the cached ``config.json`` of ``hub_id`` at ``revision`` when its weights are in
    the Hugging Face cache too, else None."""
    from huggingface_hub import try_to_load_from_cache

    def cached(name: str) -> str | None:
        p = try_to_load_from_cache(hub_id, name, cache_dir=cache_dir, revision=revision)
        return p if isinstance(p, str) else None

    config = cached("config.json")
    if config is None or not any(cached(w) for w in WEIGHT_FILES):
        return None
    return config


def probe(url: str, headers: Mapping[str, str] | None = None) -> tuple[int | None, str]:
    """(HTTP status, '') of a GET of ``url`` within :data:`PROBE_TIMEOUT_S`, or (None, why)."""
    import httpx2

    try:
        resp = httpx2.get(
            url, headers=dict(headers or {}), timeout=PROBE_TIMEOUT_S, follow_redirects=True
        )
    except httpx2.HTTPError as exc:
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return resp.status_code, ""


def check_hf_weights(model_cfg: Mapping[str, Any], cache_dir: str | Path | None = None) -> None:
    """A hub checkpoint must be cached or downloadable now; a local one must exist."""
    from stylisticbias.judge.engines.hf.loading import resolve_source

    name = model_cfg.get("name")
    src = f"conf/model/{name}.yaml"
    hub_id, local = resolve_source(model_cfg)  # a missing local_build is its own one-line error
    if local:
        return
    revision = str(model_cfg.get("revision") or "main")
    if cached_weights(hub_id, revision, cache_dir):
        return
    download = f"`hf download {hub_id} --revision {revision}`"
    todo = (
        f"download it with {download} on a machine with network (then copy the cache, "
        "$HF_HOME/hub), or set hub_id to a local directory holding the checkpoint, or use a "
        "tiny random-weight stand-in (local_build, conf/model/tiny-*.yaml)"
    )
    if _offline():
        raise StylisticBiasError(
            f"{src}: checkpoint {hub_id!r} (revision {revision}) is not in the Hugging Face "
            f"cache and HF_HUB_OFFLINE is set; {todo}"
        )
    from huggingface_hub import constants

    endpoint = os.environ.get("HF_ENDPOINT") or constants.ENDPOINT
    url = f"{endpoint.rstrip('/')}/api/models/{hub_id}/revision/{revision}"
    t0 = time.monotonic()
    status, why = probe(url)
    if status is None:
        raise StylisticBiasError(
            f"{src}: checkpoint {hub_id!r} (revision {revision}) is not in the Hugging Face "
            f"cache and {endpoint} cannot be reached ({why}, {time.monotonic() - t0:.1f}s); "
            f"{todo}; with the weights cached, set HF_HUB_OFFLINE=1 to skip the hub"
        )
    if status in (401, 403):
        raise StylisticBiasError(
            f"{src}: checkpoint {hub_id!r} is gated (HTTP {status} from {endpoint}); accept its "
            f"licence on the hub and log in (`hf auth login` or HF_TOKEN), then {download}"
        )
    if status == 404:
        raise StylisticBiasError(
            f"{src}: checkpoint {hub_id!r} at revision {revision!r} does not exist on {endpoint} "
            "(HTTP 404); check hub_id and revision"
        )
    log.info("%s: %s is not cached; it will be downloaded from %s", name, hub_id, endpoint)


def checkpoint_parameters(
    model_cfg: Mapping[str, Any], cache_dir: str | Path | None = None
) -> float | None:
    """Parameter count of the checkpoint on disk (from its safetensors headers or index), or
    None when unknown (not on disk, or no safetensors)."""
    from stylisticbias.judge.engines.hf.loading import resolve_source

    hub_id, local = resolve_source(model_cfg)
    if local:
        folder = Path(hub_id)
    else:
        config = cached_weights(hub_id, str(model_cfg.get("revision") or "main"), cache_dir)
        if config is None:
            return None
        folder = Path(config).parent
    index = folder / "model.safetensors.index.json"
    files = (
        sorted(set(json.loads(index.read_text())["weight_map"].values()))
        if index.exists()
        else ["model.safetensors"]
    )
    total = 0
    for f in files:
        path = folder / f
        if not path.exists():
            return None
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        for key, meta in header.items():
            if key != "__metadata__":
                count = 1
                for d in meta["shape"]:
                    count *= int(d)
                total += count
    return float(total)


def cpu_seconds_per_image(n_params: float, tokens_per_image: float, flops_per_s: float) -> float:
    """Expected seconds per image: forward FLOPs (2 x parameters x tokens) over the measured
    matrix-multiply throughput of this CPU."""
    return 2.0 * n_params * tokens_per_image / flops_per_s


def cpu_matmul_flops(seconds: float = 0.3) -> float:
    """FLOP/s of float32 matrix multiplies on this CPU (torch, all its threads), measured now."""
    import torch

    a = torch.randn(512, 512)
    torch.mm(a, a)  # warm up
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        torch.mm(a, a)
        n += 1
    return n * 2 * 512**3 / (time.perf_counter() - t0)


def will_run_on_cpu(engine_cfg: Mapping[str, Any]) -> bool:
    """True when the engine's settings put the model on the CPU here."""
    accel = str((engine_cfg.get("lightning") or {}).get("accelerator") or "auto")
    device = str(engine_cfg.get("device") or "auto")
    if accel == "cpu" or device == "cpu":
        return True
    if accel != "auto" or device != "auto":  # an accelerator named: it runs there (or fails)
        return False
    import torch

    return not torch.cuda.is_available()


#: tokens one image's prompts put through the model, per prompt (image tokens are shared by the
#: prompts: prefix once, then each prompt's suffix and answer branches; docs/engines.md)
IMAGE_TOKENS = 1024
TOKENS_PER_PROMPT = 40


def warn_cpu(
    model_cfg: Mapping[str, Any],
    engine_cfg: Mapping[str, Any],
    *,
    n_prompts: int | None = None,
    n_images: int | None = None,
) -> float | None:
    """Log a warning with the expected time when a large checkpoint will run on the CPU; the
    expected seconds per image (None when no warning applies)."""
    params = checkpoint_parameters(model_cfg)
    if params is None or params < LARGE_PARAMS or not will_run_on_cpu(engine_cfg):
        return None
    prompts = n_prompts or 100
    tokens = IMAGE_TOKENS + prompts * TOKENS_PER_PROMPT
    per_image = cpu_seconds_per_image(params, tokens, cpu_matmul_flops())
    total = f", ~{per_image * n_images / 3600:.1f} h for {n_images} images" if n_images else ""
    log.warning(
        "%s: %.1fB parameters on accelerator cpu: expect ~%.0f s per image (%d prompts)%s; "
        "use a GPU (engine.lightning.accelerator=gpu) or a served endpoint (engine: openai)",
        model_cfg.get("name"),
        params / 1e9,
        per_image,
        prompts,
        total,
    )
    return per_image
