"""HFJudgeEngine: settings are checked when the engine is built, before any weights load."""

from __future__ import annotations

import pytest

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.hf_engine import HFJudgeEngine

MODEL = {"name": "tiny-llava-next"}
ENGINE = {"name": "hf", "decoding": "exact"}
JUDGE = {"seeds": [1, 2, 3], "orderings": [1, 2, 3, 4]}


def test_defaults(benchmark) -> None:
    eng = HFJudgeEngine(MODEL, ENGINE, JUDGE, benchmark)
    assert eng.decoding_params.temperature == 0.2
    assert eng.decoding_params.max_new_tokens == 16
    assert eng.decoding_params.max_branches_per_suffix == 64
    assert len(eng.specs) == 25 * 4


@pytest.mark.parametrize(
    ("engine", "judge", "match"),
    [
        ({"decoding": "greedy"}, {}, r"engine.decoding 'greedy'; valid: generate, sampled, exact"),
        ({"seed_mode": "random"}, {}, r"engine.seed_mode 'random'; valid:"),
        ({"prefix_sharing": "paged"}, {}, r"engine.prefix_sharing 'paged'; valid: shared, copy"),
        ({"max_branches": 4096}, {}, r"replaced by engine.max_branches_per_suffix"),
        ({}, {"seeds": [0, 1]}, r"judge.seeds must be >= 1"),
    ],
)
def test_bad_settings_name_the_key(benchmark, engine, judge, match) -> None:
    with pytest.raises(StylisticBiasError, match=match):
        HFJudgeEngine(MODEL, {**ENGINE, **engine}, {**JUDGE, **judge}, benchmark)
