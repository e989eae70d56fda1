"""``params.yaml`` views that set a section of their own (``paths``, ...) compose and check the
same way: ``configure compose paths.qa=data/qa2`` writes a view the ``check`` stage and every
other stage resolve into the whole configuration."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stylisticbias.config import ROOT, is_view
from stylisticbias_dev.project_copy import copy_project, tool_env

#: the data root of the overrides below: inside data/, holding no git-tracked file
RUN = "data/run2"


def _good_paths() -> dict[str, str]:
    """A good value for every key of ``paths`` (every field of the typed spec): the data root
    ``data/run2``, each output ``data/run2/<key>2``."""
    from stylisticbias.spec.sections import PathsSpec

    keys = [f.name for f in dataclasses.fields(PathsSpec)]
    assert "data" in keys and "qa" in keys
    return {key: RUN if key == "data" else f"{RUN}/{key}2" for key in keys}


def test_the_whole_configurations_keys_are_the_specs_sections() -> None:
    """:data:`~stylisticbias.config.WHOLE_KEYS` (what tells a whole configuration from a view)
    lists every section of the typed configuration but the sweep's."""
    from stylisticbias.config import WHOLE_KEYS
    from stylisticbias.spec import Config

    want = [f.name for f in dataclasses.fields(Config) if f.name != "sweep"]
    assert list(WHOLE_KEYS) == want


def test_a_view_holding_sections_is_still_a_view() -> None:
    """A view is a view whichever sections it sets; a whole configuration is not one."""
    view = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert is_view(view)
    for extra in ({"paths": {"qa": "data/qa2"}}, {"paths": {}, "faces": {"n": 3}, "seed": 1}):
        assert is_view({**view, **extra}), extra
    whole = {k: {} for k in ("seed", "paths", "faces", "generator")}
    assert not is_view(whole)  # no judged_models: a hand-written whole configuration


def test_a_view_setting_every_path_resolves_and_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process: the view ``configure compose`` writes for an override of every ``paths`` key
    resolves into the whole configuration as the ``check`` stage reads it (``params.yaml``) and
    as a stage reads it with ``data/config/`` gone, and passes the compose-time checks."""
    from stylisticbias.config import load_config, load_params
    from stylisticbias.configure import compose_view
    from stylisticbias.params_view import dump_view
    from stylisticbias.validate import validate_params

    paths = _good_paths()
    view, params = compose_view([f"paths.{k}={v}" for k, v in paths.items()])
    assert view["paths"] == paths and params["paths"] == paths
    (tmp_path / "conf").symlink_to(ROOT / "conf")  # read only; the project root is tmp_path
    (tmp_path / "params.yaml").write_text(dump_view(view), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STYLISTICBIAS_PARAMS", raising=False)
    whole = load_params(tmp_path / "params.yaml")  # what the check stage reads
    assert whole["paths"] == paths and "experiment" not in whole
    validate_params(whole)
    config = load_config()  # no data/config/resolved.yaml: params.yaml resolved here
    assert dataclasses.asdict(config.paths) == paths
    assert config.model_names == list(view["models"])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh copy of the project (git, no data)."""
    return copy_project(ROOT, tmp_path_factory.mktemp("project"))


def _run(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**tool_env(), "PYTHONPATH": str(ROOT / "src")}
    env.pop("STYLISTICBIAS_PARAMS", None)
    return subprocess.run(
        [sys.executable, *argv], cwd=project, env=env, capture_output=True, text=True
    )


@pytest.mark.slow  # a project copy and five processes: ~10 CPU-s
def test_every_paths_key_overridden_composes_checks_and_runs_a_stage(project: Path) -> None:
    """``configure compose paths.<key>=<good>`` for every key at once -> the view holds them;
    ``configure check`` with the same overrides, the ``check`` stage and the ``faces`` stage
    accept it and write where it says, also with ``data/config/`` gone (the stage resolves
    ``params.yaml`` itself)."""
    paths = _good_paths()
    # one protocol: a path set without ${protocol} would be every protocol's
    overrides = ["faces.n=3", "protocols=[stylisticbias]"]
    overrides += [f"paths.{k}={v}" for k, v in paths.items()]
    proc = _run(project, "-m", "stylisticbias.configure", "compose", *overrides)
    assert proc.returncode == 0, proc.stderr
    view = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    assert view["paths"] == paths and "experiment" in view
    proc = _run(project, "-m", "stylisticbias.configure", "check", *overrides)
    assert proc.returncode == 0, proc.stderr

    proc = _run(project, "pipelines/check.py")
    assert proc.returncode == 0, proc.stderr
    resolved = yaml.safe_load((project / "data/config/resolved.yaml").read_text("utf-8"))
    assert resolved["paths"] == paths
    assert resolved["faces"]["n"] == 3 and "experiment" not in resolved
    dataset = (project / "data/config/stylisticbias/dataset.yaml").read_text(encoding="utf-8")
    assert f"{RUN}/qa2" in dataset  # the dataset group's settings hold the new paths

    proc = _run(project, "pipelines/faces.py")
    assert proc.returncode == 0, proc.stderr
    assert (project / paths["faces"] / "faces.parquet").is_file()
    assert not (project / "data/faces").exists()

    # with data/config/ gone, a stage resolves params.yaml (the view) itself
    for f in sorted((project / "data/config").rglob("*"), reverse=True):
        f.unlink() if f.is_file() else f.rmdir()
    (project / "data/config").rmdir()
    proc = _run(project, "pipelines/faces.py")
    assert proc.returncode == 0, proc.stderr
    assert not (project / "data/faces").exists()
