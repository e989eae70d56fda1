"""Engine registry: the engine config's ``name`` picks the :class:`JudgeEngine` class."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.base import JudgeEngine

#: engine name -> "module:Class" (imported lazily: the hf engine pulls in transformers)
ENGINES: dict[str, str] = {
    "simulated": "stylisticbias.judge.simulated:SimulatedJudgeEngine",
    "hf": "stylisticbias.judge.hf_engine:HFJudgeEngine",
    "openai": "stylisticbias.judge.openai_engine.engine:OpenAIJudgeEngine",
}


def make_engine(
    model_cfg: Mapping[str, Any],
    engine_cfg: Mapping[str, Any],
    judge_cfg: Mapping[str, Any],
    benchmark: Benchmark,
) -> JudgeEngine:
    """Instantiate the engine named by ``engine_cfg["name"]`` for one model."""
    name = str(engine_cfg.get("name", ""))
    if name not in ENGINES:
        raise StylisticBiasError(
            f"unknown engine {name!r}; valid: {', '.join(sorted(ENGINES))} (conf/engine/*.yaml)"
        )
    module, cls = ENGINES[name].split(":")
    engine_cls = getattr(importlib.import_module(module), cls)
    return engine_cls(model_cfg, engine_cfg, judge_cfg, benchmark)
