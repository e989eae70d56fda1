"""The code each group of stages hashes (stylisticbias.stage_inputs): every module its stage
scripts import, transitively (lazy imports included), or its settings' ``_target_`` names, and
nothing a change to which could not alter the group's outputs; and the settings each group holds:
exactly those its stages read (a setting only the scores or the report stages read re-runs those
stages only)."""

from __future__ import annotations

import copy
import functools
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from stylisticbias.config import ROOT, compose
from stylisticbias.stage_inputs import (
    GROUPS,
    StageGroup,
    code_closure,
    group_file,
    group_inputs,
    stage_input_files,
)

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


# -- settings: each group holds what its stages read, and nothing else ----

MODELS = ("simulated-strong", "simulated-weak")


def _files(*groups: str, models: tuple[str, ...] = MODELS) -> set[str]:
    """The data/config files of ``groups`` (one per judged model for the judge group) of the
    composition's one job (the demo's first protocol), and the run-wide audit group's."""
    job = "data/config/stylisticbias"
    return {
        "data/config/audit.yaml"
        if g == "audit"
        else f"{job}/{g}/{m}.yaml"
        if g == "judge"
        else f"{job}/{g}.yaml"
        for g in groups
        for m in (models if g == "judge" else ("",))
    }


#: a setting (dotted key, new value) -> the data/config files whose bytes it changes: the
#: stages that read it re-run, no other
CHANGES: dict[tuple[str, Any], set[str]] = {
    # read by the scores stage alone (how it reads the records; in the file of judge@MODEL and
    # scores@MODEL): never the analysis' (they read the scores)
    ("judge.undecided_warn", 0.03): _files("judge"),
    ("judge.undecided_max", 0.2): _files("judge"),
    ("judge.parser", "official"): _files("judge"),
    ("judge.dry_run", True): _files("judge"),
    # what is judged and how: the calibration re-simulates it, the report states it
    ("judge.seeds", (1,)): _files("judge", "analysis", "report"),
    ("judge.temperature", 0.5): _files("judge", "analysis", "report"),
    ("qa.policy", "exclude"): _files("dataset", "judge"),
    # read in reporting only (the report and its MLflow runs): report and track re-run, no
    # analyze or calibrate; and by the dataset stages
    ("tracking.timeout_s", 9): _files("report", "audit"),
    ("tracking.experiment_name", "another"): _files("report", "audit"),
    ("soda.alpha", 0.05): _files("dataset", "report", "audit"),
    ("faces.n", 7): _files("dataset", "analysis", "report"),
    ("generator.size", 48): _files("dataset", "analysis", "report"),
    ("analysis.bootstrap.n_resamples", 10): _files("analysis", "report", "audit"),
    ("analysis.definitions", "official"): _files("judge", "analysis", "report", "audit"),
    # a model's settings: its own judge stage; a speed setting of its engine: that stage only
    ("models.simulated-weak.noise_sd", 0.2): _files(
        "judge", "analysis", "report", "audit", models=("simulated-weak",)
    ),
    ("models.simulated-weak.engine.image_batch_size", 8): _files(
        "judge", models=("simulated-weak",)
    ),
    # read by no stage
    ("release.out", "elsewhere"): set(),
}


def _set(params: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(params)
    node = out
    *head, last = key.split(".")
    for k in head:
        node = node[k]
    assert last in node, key
    node[last] = list(value) if isinstance(value, tuple) else value
    return out


@pytest.fixture(scope="module")
def demo() -> tuple[dict[str, Any], dict[str, str]]:
    """The demo's composition and the text of every group file it gives."""
    params = compose([f"model=[{','.join(MODELS)}]"])
    return params, _group_texts(params)


def _group_texts(params: dict[str, Any]) -> dict[str, str]:
    files = stage_input_files(params, ROOT)
    return {p.as_posix(): t for p, t in files.items() if p.name != "resolved.yaml"}


@pytest.fixture(autouse=False)
def hashes_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The input hashes of this checkout, computed once (the settings are what changes here)."""
    import stylisticbias.stage_inputs as si

    monkeypatch.setattr(si, "input_hash", functools.cache(si.input_hash))


@pytest.mark.parametrize(("change", "expected"), CHANGES.items(), ids=[k for k, _ in CHANGES])
def test_a_setting_changes_the_files_of_the_stages_that_read_it_only(
    demo: tuple[dict[str, Any], dict[str, str]],
    change: tuple[str, Any],
    expected: set[str],
    hashes_once: None,
) -> None:
    params, before = demo
    after = _group_texts(_set(params, *change))
    assert set(after) == set(before)
    assert {f for f in before if after[f] != before[f]} == expected


def test_a_composed_override_read_in_scores_only_reruns_no_analysis(
    demo: tuple[dict[str, Any], dict[str, str]], hashes_once: None
) -> None:
    """`configure compose judge.undecided_warn=0.03` (the issue's case; its 0.3 exceeds
    undecided_max, now refused in one line): only the files of judge@MODEL / scores@MODEL
    change (the judge finds nothing to do: tests/judge/test_nothing_to_do.py); analyze,
    calibrate, report and track stay up to date while the scores keep their bytes."""
    _, before = demo
    after = _group_texts(compose([f"model=[{','.join(MODELS)}]", "judge.undecided_warn=0.03"]))
    assert {f for f in before if after[f] != before[f]} == _files("judge")


def _leaves(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node:
        return [k for key, v in node.items() for k in _leaves(v, f"{prefix}{key}.")]
    return [prefix.rstrip(".")]


def test_every_setting_is_read_by_a_group_or_named_as_read_by_none(
    demo: tuple[dict[str, Any], dict[str, str]],
) -> None:
    """A key added to the configuration must be placed: in the groups of the stages that read
    it, or in READ_BY_NO_STAGE; and every key a group lists exists."""
    from stylisticbias.stage_inputs import READ_BY_NO_STAGE, readers

    params, _ = demo
    unread = [
        k for k in _leaves(params) if not readers(k) and k.split(".")[0] not in READ_BY_NO_STAGE
    ]
    assert unread == []
    for group in GROUPS:
        for key in group.settings:
            node: Any = params
            for part in key.format(model=MODELS[0]).split("."):
                assert isinstance(node, dict) and part in node, (group.name, key)
                node = node[part]
    # the table above, as readers() states it
    for (key, _), files in CHANGES.items():
        stems = {"judge" if Path(f).parent.name == "judge" else Path(f).stem for f in files}
        assert set(readers(key)) == stems, key


def test_an_undecided_warning_above_the_limit_is_refused_at_compose() -> None:
    """`judge.undecided_warn=0.3` over the default undecided_max 0.05 was composed, the judge
    re-ran, and only the scores stage refused it (after DVC had deleted its output)."""
    from stylisticbias.errors import StylisticBiasError

    with pytest.raises(StylisticBiasError, match=r"undecided_warn=0\.3 > judge\.undecided_max"):
        compose(["judge.undecided_warn=0.3"])
