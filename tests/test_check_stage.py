"""The ``check`` stage: ``dvc exp run -S <bad value>`` stops in one line before any other stage;
otherwise it writes ``data/config/`` (the resolved configuration, one file per group of stages)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stylisticbias.config import ROOT
from stylisticbias_dev.project_copy import copy_project, tool_env

#: what the check stage writes; every other stage depends on a file in it
STAMP = "data/config/resolved.yaml"


def _dvc(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["dvc", *args], cwd=project, env=tool_env(), capture_output=True, text=True
    )


def test_every_stage_depends_on_a_file_the_check_writes() -> None:
    """DVC runs ``check`` before any other stage (every other stage depends on a file in its
    output ``data/config``), and on every ``dvc repro`` (``always_changed``): it reads
    params.yaml and conf/, which no stage lists."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert stages["check"]["outs"] == [{"data/config": {"cache": False}}]
    assert stages["check"]["always_changed"] is True
    missing = [
        name
        for name, body in stages.items()
        if name != "check"
        and not any(str(d).startswith("data/config/") for d in (body.get("do") or body)["deps"])
    ]
    assert not missing, f"stages that may run before the check: {missing}"


def test_the_check_refuses_a_bad_params_file_in_one_line(tmp_path: Path) -> None:
    """The stage script alone: our one line, exit 2, no stamp."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["faces"]["n"] = -3
    bad = tmp_path / "params.yaml"
    bad.write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**tool_env(), "STYLISTICBIAS_PARAMS": str(bad)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "pipelines" / "check.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "ERROR stylisticbias: error: faces.n=-3: must be an integer >= 1"
    ]
    params["faces"]["nn"] = 8
    params["faces"]["n"] = 3
    bad.write_text(yaml.safe_dump(params, sort_keys=False))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "pipelines" / "check.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "unknown key 'faces.nn'; valid keys of faces: n, sampler, seed" in proc.stderr


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh copy of the project (git, DVC with its Hydra integration, no data)."""
    return copy_project(ROOT, tmp_path_factory.mktemp("project"))


def _ran(out: str) -> list[str]:
    return [line.split("'")[1] for line in out.splitlines() if line.startswith("Running stage '")]


@pytest.mark.slow  # dvc exp run on a copy of the project: ~15 s each
def test_exp_run_with_an_out_of_range_value_stops_at_the_check(project: Path) -> None:
    """DVC writes params.yaml (it composes conf/ with the override); the check stage then
    refuses it in our one line, exit 2, and no other stage starts."""
    proc = _dvc(project, "exp", "run", "-S", "faces.n=-3")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert _ran(out) == ["check"], out
    errors = [line for line in out.splitlines() if "error: " in line and "stylisticbias" in line]
    assert errors == ["ERROR stylisticbias: error: faces.n=-3: must be an integer >= 1"], out
    assert "exited with 2" in out
    assert yaml.safe_load((project / "params.yaml").read_text())["faces"]["n"] == -3
    assert not (project / "data" / "faces").exists()
    assert not (project / STAMP).exists()


@pytest.mark.slow
def test_exp_run_with_an_unknown_key_fails_before_params_yaml_is_written(project: Path) -> None:
    """A key that is not in the configuration is refused by DVC's Hydra composition itself,
    before params.yaml is written and before any stage (its message, not ours: README)."""
    before = (ROOT / "params.yaml").read_text()
    (project / "params.yaml").write_text(before)
    proc = _dvc(project, "exp", "run", "-S", "faces.nn=8")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert _ran(out) == [], out
    assert "Could not override 'faces.nn'" in out and "+faces.nn=8" in out, out
    assert (project / "params.yaml").read_text() == before


@pytest.mark.slow
def test_exp_run_records_the_model_choice_in_one_column(project: Path) -> None:
    """``-S 'model=[...]'``: the experiment's ``judged_models`` column names its models."""
    (project / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    proc = _dvc(project, "exp", "run", "-n", "one-judge", "-S", "model=[simulated-weak]", "check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project / STAMP).is_file()
    resolved = yaml.safe_load((project / STAMP).read_text())
    assert list(resolved["models"]) == ["simulated-weak"]
    for protocol in resolved["protocols"]:  # the judge group's file per protocol and model
        assert (project / f"data/config/{protocol}/judge/simulated-weak.yaml").is_file()
        assert not (project / f"data/config/{protocol}/judge/simulated-strong.yaml").exists()
    show = _dvc(project, "exp", "show", "--no-pager", "--csv", "--keep", "judged_models$")
    rows = {r.split(",", 1)[0]: r for r in show.stdout.splitlines()}
    assert "simulated-weak" in rows["one-judge"] and "simulated-strong" not in rows["one-judge"]
