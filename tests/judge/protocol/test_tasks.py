"""Task types: the registry, the binary forced choice's parts, and the scores stage's dispatch."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from stylisticbias.benchmark import Benchmark, benchmark_from_config
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol import parsing, prompts
from stylisticbias.judge.protocol.tasks import registry
from stylisticbias.judge.protocol.tasks.base import TaskType
from stylisticbias.judge.protocol.tasks.binary_choice import BINARY_CHOICE, score_cells
from stylisticbias.scores import compute_scores


def test_binary_choice_is_registered_and_is_the_default(benchmark: Benchmark) -> None:
    assert registry.task_type("binary_choice") is BINARY_CHOICE
    assert benchmark.task == "binary_choice"  # conf/benchmark/stylisticbias.yaml names none
    assert BINARY_CHOICE.prompts is prompts.prompt_specs
    assert BINARY_CHOICE.parse is parsing.parse_response
    assert BINARY_CHOICE.readers == parsing.PARSERS
    assert BINARY_CHOICE.outcomes == ("positive", "negative", "invalid")


def test_unknown_task_is_one_line_naming_the_valid_ones() -> None:
    msg = r"protocol task: unknown task type 'rating'; valid: binary_choice"
    with pytest.raises(StylisticBiasError, match=msg):
        registry.task_type("rating")


def test_protocol_names_its_task(benchmark: Benchmark) -> None:
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[3]
    cfg = yaml.safe_load((root / "conf" / "benchmark" / "stylisticbias.yaml").read_text())
    assert benchmark_from_config({**cfg, "task": "rating"}).task == "rating"
    with pytest.raises(StylisticBiasError, match="unknown key"):
        benchmark_from_config({**cfg, "taks": "rating"})  # tasks: is the task-scenario list


def _rows(benchmark: Benchmark) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Two images of one face (base + a variation), exact rows for two scenarios."""
    demo = {a: v[0] for a, v in benchmark.demographics.items()}
    faces = pd.DataFrame([{"image_id": "f0", "face_id": "f0", **demo}])
    var = pd.DataFrame(
        [
            {
                "image_id": "v0",
                "face_id": "f0",
                "category": "c",
                "attribute": "a",
                "value": "x",
                **demo,
            }
        ]
    )
    rows = []
    for img, p_pos in (("f0", 0.6), ("v0", 0.8)):
        for sc in benchmark.scenarios[:2]:
            for o in benchmark.orderings:
                rows.append(
                    {
                        "model": "m",
                        "image_id": img,
                        "face_id": "f0",
                        "scenario_id": sc.id,
                        "ordering": o.id,
                        "seed": 0,
                        "choice": None,
                        "response": None,
                        "p_pos": p_pos,
                        "p_neg": 1 - p_pos,
                        "p_invalid": 0.0,
                        "p_undecided": 0.0,
                        "simulated": True,
                    }
                )
    return pd.DataFrame(rows), faces, var


def test_score_cells_is_the_phi_of_the_scores_stage(benchmark: Benchmark) -> None:
    j, faces, var = _rows(benchmark)
    cells = score_cells(j, benchmark, source="auto", k=3, reader="paper")
    assert np.allclose(cells.set_index("image_id")["phi"].groupby(level=0).first(), [0.6, 0.8])
    scores = compute_scores(j, faces, var, benchmark)
    assert np.allclose(scores.loc[~scores["is_base"], "delta"], 0.2)


def test_scores_stage_dispatches_on_the_protocols_task(
    benchmark: Benchmark, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second task type is one registered TaskType: the scores stage uses its score_cells."""

    def constant(judgments: pd.DataFrame, bench: Benchmark, **_: object) -> pd.DataFrame:
        out = score_cells(judgments, bench, source="auto", k=3, reader="paper")
        return out.assign(phi=0.5, phi_low=0.5, phi_high=0.5, phi_paper=0.5, phi_exact=0.5)

    other = TaskType(
        "constant",
        ("x",),
        ("paper",),
        prompts.prompt_specs,
        parsing.parse_response,
        parsing.decide_prefix,
        constant,
    )
    monkeypatch.setitem(registry.TASK_TYPES, "constant", other)
    j, faces, var = _rows(benchmark)
    scores = compute_scores(j, faces, var, replace(benchmark, task="constant"))
    assert (scores["phi"] == 0.5).all() and (scores.loc[~scores["is_base"], "delta"] == 0).all()
    with pytest.raises(StylisticBiasError, match=r"judge\.parser: 'official'; valid: paper"):
        compute_scores(j, faces, var, replace(benchmark, task="constant"), parser="official")
