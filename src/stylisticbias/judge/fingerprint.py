"""The fingerprint of a judge run: everything that determines its records, and only that.

Two runs with the same fingerprint produce the same records, so a resumed run reuses the
records of its configuration and a changed configuration moves them to the stash
(:mod:`stylisticbias.judge.records`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from stylisticbias.benchmark import Benchmark
from stylisticbias.judge.engines.base import JudgeEngine

#: engine settings that change speed or placement, never the records
_NON_RESULT_ENGINE_KEYS = {
    "allow_remote_licensed_images",
    "lightning",
    "runner",
    "image_batch_size",
    "num_workers",
    "device",
    "suffix_batch_size",
    "branch_batch_size",
    "suffix_padding",  # padded and per-length batches give the same records (test_hf_exact_padding)
    "progress",
}
#: model keys that name or label the model in reports, never change its records
_NON_RESULT_MODEL_KEYS = {
    "engine",
    "_target_",
    "paper_name",
    "display_name",
    "max_images",
    "prices",
}
#: keys of a served model's ``endpoint`` that say how requests travel (online or as provider
#: batch jobs, at what rate), never what is answered
_NON_RESULT_ENDPOINT_KEYS = {"batch", "limits"}
#: judge keys read by other stages (scores: undecided_*, parser) or that select images / the
#: dry run: none changes a record
_NON_RESULT_JUDGE_KEYS = {
    "models",
    "images",
    "dry_run",
    "undecided_warn",
    "undecided_max",
    "parser",
}


def fingerprint(
    model_cfg: Mapping[str, Any],
    engine_cfg: Mapping[str, Any],
    judge_cfg: Mapping[str, Any],
    benchmark: Benchmark,
    engine: JudgeEngine | None,
) -> dict[str, Any]:
    """Everything that determines the records, and only that: not which images, not speed
    settings, not labels (``paper_name``, ``display_name``), not the settings other stages read
    (``judge.undecided_warn``/``undecided_max``/``parser``) -- changing one of those must not
    judge everything again.

    ``aliases`` holds the sha256 the same configuration had when those keys still counted, so
    the records of an earlier version are recognised as this configuration's (not stashed).
    ``engine`` adds its own ``fingerprint()`` when it has one; None for an engine class without
    one (the same print, computed before the engine is built).
    """

    def digest(
        model_skip: set[str], judge_skip: set[str], endpoint_skip: frozenset[str] = frozenset()
    ) -> tuple[str, Any]:
        model = {k: v for k, v in model_cfg.items() if k not in model_skip}
        if endpoint_skip and isinstance(model.get("endpoint"), Mapping):
            model["endpoint"] = {
                k: v for k, v in model["endpoint"].items() if k not in endpoint_skip
            }
        fp: dict[str, Any] = {
            "model": model,
            "engine": {k: v for k, v in engine_cfg.items() if k not in _NON_RESULT_ENGINE_KEYS},
            "judge": {k: v for k, v in judge_cfg.items() if k not in judge_skip},
            # optional annotations enter only when set (a protocol without them keeps its print)
            "scenarios": [
                {k: v for k, v in s.__dict__.items() if v not in ("", (), None)}
                for s in benchmark.scenarios
            ],
            "orderings": [
                [o.id, o.slots, *([o.answer] if o.answer else [])] for o in benchmark.orderings
            ],
            "forced_choice": benchmark.prompts.get("forced_choice"),
        }
        if hasattr(engine, "fingerprint"):
            fp["engine_extra"] = engine.fingerprint()
        blob = json.dumps(fp, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest(), json.loads(blob)

    sha, config = digest(
        _NON_RESULT_MODEL_KEYS, _NON_RESULT_JUDGE_KEYS, frozenset(_NON_RESULT_ENDPOINT_KEYS)
    )
    legacy, _ = digest({"engine", "_target_", "max_images"}, {"models", "images", "dry_run"})
    return {"sha256": sha, "config": config, "aliases": [legacy] if legacy != sha else []}
