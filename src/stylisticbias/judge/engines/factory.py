"""Instantiate a model's judging engine: the class its ``_target_`` names (conf/model/*.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.base import JudgeEngine
from stylisticbias.judge.protocol.licence import check_licence


def engine_class(model_cfg: Mapping[str, Any]) -> type[JudgeEngine]:
    """The engine class ``model_cfg["_target_"]`` names, not built (nothing loaded)."""
    from hydra.utils import get_class

    target = str(model_cfg.get("_target_") or "")
    name = model_cfg.get("name", "?")
    try:
        cls = get_class(target)
    except Exception as exc:  # hydra wraps ImportError/AttributeError
        raise StylisticBiasError(
            f"conf/model/{name}.yaml: _target_ {target!r} cannot be imported ({exc})"
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, JudgeEngine)):
        raise StylisticBiasError(
            f"conf/model/{name}.yaml: _target_ {target!r} is not a JudgeEngine subclass"
        )
    return cls


def make_engine(
    model_cfg: Mapping[str, Any],
    judge_cfg: Mapping[str, Any],
    benchmark: Benchmark,
) -> JudgeEngine:
    """The engine of one model: ``model_cfg["_target_"]`` built with the model's settings, its
    ``engine`` section, the shared judge protocol and the benchmark."""
    cls = engine_class(model_cfg)
    engine_cfg = dict(model_cfg.get("engine") or {})
    check_licence(model_cfg, benchmark)
    model_only = {k: v for k, v in model_cfg.items() if k not in ("engine", "_target_")}
    return cls(model_only, engine_cfg, judge_cfg, benchmark)
