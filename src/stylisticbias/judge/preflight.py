"""Checks that a model can run at all, made before the judge stage touches its output: the
engine class's :meth:`~stylisticbias.judge.engines.base.JudgeEngine.check_runnable` (hf: weights
on disk or the hub reachable, and a CPU warning for large checkpoints; openai: the API key is
set and the endpoint answers). Imports the engine module only (no torch, no Lightning), so the
judge stage script runs it first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def check_model(
    model_cfg: Mapping[str, Any],
    engine_cfg: Mapping[str, Any],
    *,
    n_prompts: int | None = None,
    n_images: int | None = None,
) -> None:
    """Fail in one line if the model cannot run; with ``n_images`` (and ``n_prompts`` per
    image), an engine may also warn about the expected time."""
    from hydra.utils import get_class

    try:
        cls = get_class(str(model_cfg.get("_target_") or ""))
    except Exception:  # hydra wraps ImportError/AttributeError; make_engine reports it
        return
    check = getattr(cls, "check_runnable", None)
    if check is not None:
        check(model_cfg, engine_cfg, n_prompts=n_prompts, n_images=n_images)
