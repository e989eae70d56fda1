"""HFJudgeEngine: settings are checked when the engine is built, before any weights load."""

from __future__ import annotations

import pytest

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.hf.engine import HFJudgeEngine

MODEL = {"name": "tiny-llava-next"}
ENGINE = {"name": "hf", "decoding": "exact"}
JUDGE = {"seeds": [1, 2, 3], "orderings": [1, 2, 3, 4]}


def test_defaults(benchmark) -> None:
    """Keys the sections leave out take conf/config.yaml's judge and conf/engine/hf.yaml's values
    (the one source of every default; the engine used to repeat them, with batch sizes 100/256
    where the file says auto)."""
    import yaml

    from stylisticbias.config import conf_dir

    eng = HFJudgeEngine(MODEL, ENGINE, JUDGE, benchmark)
    judge = yaml.safe_load((conf_dir() / "config.yaml").read_text())["judge"]
    hf = yaml.safe_load((conf_dir() / "engine" / "hf.yaml").read_text())
    assert eng.decoding_params.temperature == judge["temperature"] == 0.2
    assert eng.decoding_params.max_new_tokens == judge["max_new_tokens"] == 16
    assert eng.decoding_params.max_branches_per_suffix == hf["max_branches_per_suffix"] == 64
    assert eng.decoding_params.prune_threshold == hf["prune_threshold"]
    assert eng.seed_mode == hf["seed_mode"] and eng.prefix_sharing == hf["prefix_sharing"]
    assert hf["suffix_batch_size"] == hf["branch_batch_size"] == "auto"
    assert eng._auto_sizes == {"suffix_batch_size", "branch_batch_size"}
    assert len(eng.specs) == 25 * 4
    other = HFJudgeEngine(
        MODEL,
        {**ENGINE, "suffix_batch_size": 7, "branch_batch_size": 9},
        {**JUDGE, "temperature": 1.0},
        benchmark,
    )
    assert other.suffix_batch_size == 7 and other.decoding_params.branch_batch_size == 9
    assert other.decoding_params.temperature == 1.0 and not other._auto_sizes


@pytest.mark.parametrize(
    ("engine", "judge", "match"),
    [
        ({"decoding": "greedy"}, {}, r"engine.decoding='greedy'; valid: exact, sampled, generate"),
        ({"seed_mode": "random"}, {}, r"engine.seed_mode='random'; valid: literal, hashed"),
        ({"prefix_sharing": "paged"}, {}, r"engine.prefix_sharing='paged'; valid: shared, copy"),
        ({"max_branches": 4096}, {}, r"replaced by engine.max_branches_per_suffix"),
        ({"suffix_batch_size": 0}, {}, r"engine.suffix_batch_size=0: must be 'auto' or an"),
        ({"prune_threshold": "x"}, {}, r"engine hf: .*'x'.*prune_threshold"),
        ({}, {"temperature": 0}, r"judge.temperature=0.0: must be a number in \(0, 5\]"),
        ({}, {"seeds": [0, 1]}, r"judge.seeds=\[0, 1\]: seeds must be >= 1"),
    ],
)
def test_bad_settings_name_the_key(benchmark, engine, judge, match) -> None:
    with pytest.raises(StylisticBiasError, match=match):
        HFJudgeEngine(MODEL, {**ENGINE, **engine}, {**JUDGE, **judge}, benchmark)
