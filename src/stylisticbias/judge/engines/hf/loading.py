"""Load a judge model and its processor from a ``conf/model/<name>.yaml`` entry.

Keys read from the model config:

``hub_id``            Hub repository id or a local directory
``revision``          Hub revision (commit/tag/branch); ignored for local directories
``dtype``             ``bfloat16`` | ``float16`` | ``float32`` | ``auto``
``attn_implementation``  optional (``sdpa``, ``eager``, ``flash_attention_2``)
``processor_kwargs``  passed to ``AutoProcessor.from_pretrained`` (image-size settings)
``local_build``       tiny architecture name (test models): ``hub_id`` is a local directory built by
                      ``python -m stylisticbias_dev.tiny --model <name>`` (``make tiny``); the
                      judge never builds it -- a missing one is a one-line error naming the command
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stylisticbias.errors import StylisticBiasError

log = logging.getLogger(__name__)

_DTYPES = ("auto", "bfloat16", "float16", "float32")


def resolve_device(device: str | None) -> str:
    """``auto`` -> ``cuda`` when available, else ``cpu``; anything else is returned as is."""
    import torch

    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


def resolve_source(model_cfg: Mapping[str, Any], root: Path | None = None) -> tuple[str, bool]:
    """(hub id or absolute local path, is_local); a missing tiny checkpoint is an error."""
    hub_id = str(model_cfg.get("hub_id") or "")
    if not hub_id:
        raise StylisticBiasError(f"conf/model/{model_cfg.get('name')}.yaml: missing key 'hub_id'")
    arch = model_cfg.get("local_build")
    path = Path(hub_id)
    if not path.is_absolute() and (arch or path.exists() or hub_id.startswith((".", "/"))):
        if root is None:
            from stylisticbias.config import project_root

            root = project_root()
        path = root / path
    if arch:
        if not (path / "config.json").exists():
            name = model_cfg.get("name")
            raise StylisticBiasError(
                f"conf/model/{name}.yaml: tiny checkpoint {hub_id!r} is not built; build it with "
                f"`PYTHONPATH=src python -m stylisticbias_dev.tiny --model {name}` (or `make tiny`)"
            )
        return str(path), True
    if path.exists():
        return str(path), True
    return hub_id, False


def torch_dtype(name: str | None) -> Any:
    """The torch dtype for a config string (``auto`` is passed through)."""
    import torch

    name = str(name or "auto")
    if name not in _DTYPES:
        raise StylisticBiasError(f"model dtype {name!r}; valid: {', '.join(_DTYPES)}")
    return name if name == "auto" else getattr(torch, name)


def load_model_and_processor(
    model_cfg: Mapping[str, Any], device: str, root: Path | None = None
) -> tuple[Any, Any]:
    """``AutoModelForImageTextToText`` (eval mode, on ``device``) and ``AutoProcessor``."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    src, local = resolve_source(model_cfg, root)
    common: dict[str, Any] = {}
    if model_cfg.get("revision") and not local:
        common["revision"] = str(model_cfg["revision"])
    kwargs: dict[str, Any] = {"dtype": torch_dtype(model_cfg.get("dtype"))}
    if model_cfg.get("attn_implementation"):
        kwargs["attn_implementation"] = str(model_cfg["attn_implementation"])
    if local:
        # a local checkpoint may save an image-only processor subclass (no torchvision needed)
        from stylisticbias.judge.engines.hf.processors import register

        register()
    try:
        processor = AutoProcessor.from_pretrained(
            src, **common, **dict(model_cfg.get("processor_kwargs") or {})
        )
        model = AutoModelForImageTextToText.from_pretrained(src, **common, **kwargs)
    except OSError as exc:
        raise StylisticBiasError(
            f"model {model_cfg.get('name')!r}: cannot load {src!r} "
            f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        ) from exc
    model.to(device)
    model.eval()
    log.info("loaded %s (%s) on %s", model_cfg.get("name"), src, device)
    return model, processor
