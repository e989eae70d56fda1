"""The code each group of stages hashes (stylisticbias.stage_inputs): every module its stage
scripts import, transitively (lazy imports included), or its settings' ``_target_`` names, and
nothing a change to which could not alter the group's outputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from stylisticbias.config import ROOT
from stylisticbias.stage_inputs import GROUPS, StageGroup, code_closure, group_file, group_inputs

PARAMS = {"protocol": "stylisticbias", "models": {}}
HF = {"m": {"_target_": "stylisticbias.judge.engines.hf.engine.HFJudgeEngine"}}


def _group(name: str) -> StageGroup:
    return next(g for g in GROUPS if g.name == name)


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g.name)
def test_the_modules_every_stage_reads_are_hashed(group: StageGroup) -> None:
    inputs = group_inputs(group, ROOT, "stylisticbias")
    # the configuration, its checks and the atomic output writers are read by every stage
    for core in (
        "src/stylisticbias/config.py",
        "src/stylisticbias/outputs.py",
        "src/stylisticbias/spec/root.py",
        "src/stylisticbias/errors.py",
    ):
        assert core in inputs, (group.name, core)
    assert all((ROOT / i).exists() for i in inputs), group.name


def test_modules_reached_lazily_or_through_a_target_are_in_the_closure() -> None:
    # report.track imports the report's figure records inside a function
    assert "src/stylisticbias/report/markdown.py" in code_closure(ROOT, ("pipelines/track.py",))
    # a model's engine class is named by its settings' _target_, not imported by judge.py
    plain = code_closure(ROOT, ("pipelines/judge.py",))
    assert "src/stylisticbias/judge/engines/hf/engine.py" not in plain
    files = code_closure(ROOT, ("pipelines/judge.py",), HF)
    assert "src/stylisticbias/judge/engines/hf/engine.py" in files
    assert "src/stylisticbias/report/leaderboard.py" not in files


def test_a_change_to_an_imported_module_changes_the_group_file_and_no_other(
    tmp_path: Path,
) -> None:
    for part in ("src", "pipelines", "conf"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    groups = [g for g in GROUPS if not g.per_model]
    before = {g.name: group_file(g, PARAMS, tmp_path) for g in groups}
    with (tmp_path / "src/stylisticbias/config.py").open("a") as f:
        f.write("\n# changed\n")
    after = {g.name: group_file(g, PARAMS, tmp_path) for g in groups}
    assert all(before[n] != after[n] for n in before)
    key = "src/stylisticbias/config.py"
    assert (
        yaml.safe_load(after["dataset"])["inputs"][key]
        != yaml.safe_load(before["dataset"])["inputs"][key]
    )
    # the leaderboard is no dataset stage's code: changing it leaves the dataset group's file
    with (tmp_path / "src/stylisticbias/report/leaderboard.py").open("a") as f:
        f.write("\n# changed\n")
    assert group_file(_group("dataset"), PARAMS, tmp_path) == after["dataset"]
