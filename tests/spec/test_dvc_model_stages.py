"""Each judge@PROTOCOL-MODEL stage depends on its own protocol's job and model only
(data/config/PROTOCOL/judge/MODEL.yaml): adding a model adds its stages (every protocol) and
leaves the others up to date."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import pytest
import yaml

from stylisticbias import config


def _dvc(root: Path, *args: str) -> str:
    """``dvc <args>`` in ``root``, in this process (DVC's own command line, ``dvc.cli.main``:
    what the stages' dependencies are is the check here; other tests run the dvc program)."""
    from dvc.cli import main

    out, err = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(cwd)
    assert code == 0, out.getvalue() + err.getvalue()
    return out.getvalue()


def test_a_judge_stage_depends_on_its_own_models_settings_only() -> None:
    """``judge@MODEL`` / ``scores@MODEL`` depend on ``data/config/judge/MODEL.yaml``, which holds
    that model's section and the shared judging settings, never another model's."""
    from stylisticbias.stage_inputs import GROUPS, group_file

    stages = yaml.safe_load((config.project_root() / "dvc.yaml").read_text())["stages"]
    for name in ("judge", "scores"):
        assert "data/config/${item.protocol}/judge/${item.model}.yaml" in stages[name]["deps"]
    group = next(g for g in GROUPS if g.name == "judge")
    params = config.compose(["model=[simulated-strong,simulated-weak]"])
    for model in params["models"]:
        settings = yaml.safe_load(group_file(group, params, config.project_root(), model))
        keys = set(settings["settings"])
        assert {k for k in keys if k.startswith("models")} == {f"models.{model}"}, keys
        assert settings["settings"][f"models.{model}"] == params["models"][model]


@pytest.fixture()
def dvc_project(tmp_path: Path) -> Path:
    """A DVC project with our dvc.yaml, conf/ and the judge stages' deps (tiny stand-ins for
    data), each judge stage committed as if it had run."""
    root = config.project_root()
    for rel in ("conf", "pipelines", "src/stylisticbias"):
        shutil.copytree(root / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "dvc.yaml", tmp_path / "dvc.yaml")
    for protocol in PROTOCOLS:
        for rel in (f"data/{protocol}/faces", f"data/{protocol}/variations"):
            (tmp_path / rel).mkdir(parents=True)
            (tmp_path / rel / "x.parquet").write_bytes(rel.encode())
        (tmp_path / f"data/{protocol}/qa").mkdir(parents=True)
        (tmp_path / f"data/{protocol}/qa/checks.parquet").write_bytes(b"qa")  # qa.policy=exclude
    (tmp_path / "data/import").mkdir(parents=True)
    _dvc(tmp_path, "init", "--no-scm", "-q")
    return tmp_path


#: the protocols of the experiment composed here (two: the stages are per protocol x model)
PROTOCOLS = ("stylisticbias", "reflect")


def _compose(root: Path, models: list[str]) -> None:
    """What the check stage writes for the view of ``model=[models]``."""
    from stylisticbias.params_view import compose_view, dump_view

    view = compose_view([f"model=[{','.join(models)}]", f"protocols=[{','.join(PROTOCOLS)}]"])
    (root / "params.yaml").write_text(dump_view(view))
    _resolve(root)


def _resolve(root: Path) -> None:
    from stylisticbias.protocols import jobs
    from stylisticbias.stage_inputs import write_stage_inputs

    view = yaml.safe_load((root / "params.yaml").read_text())
    write_stage_inputs(config.full_params(view), root, jobs(view))


def _stages(*models: str) -> list[str]:
    return [f"judge@{p}-{m}" for p in PROTOCOLS for m in models]


def test_adding_a_model_leaves_other_judge_stages_up_to_date(dvc_project: Path) -> None:
    root = dvc_project
    _compose(root, ["simulated-strong", "simulated-weak"])
    for p in PROTOCOLS:
        for m in ("simulated-strong", "simulated-weak"):
            (root / "data" / p / "judgments" / m).mkdir(parents=True)
            (root / "data" / p / "judgments" / m / "judgments.parquet").write_bytes(m.encode())
            _dvc(root, "commit", "-f", "-q", f"judge@{p}-{m}")
    old = _stages("simulated-strong", "simulated-weak")
    assert "judge@" not in _dvc(root, "status", *old)

    _compose(root, ["simulated-strong", "simulated-weak", "qwen3-vl-8b"])
    status = _dvc(root, "status", *old)
    assert "judge@" not in status, status  # the existing stages stay up to date
    new = _dvc(root, "status", *_stages("qwen3-vl-8b"))
    for stage in _stages("qwen3-vl-8b"):  # the added model's stages are new, one per protocol
        assert stage in new, new

    # and a change to one model's settings stales that model's stages only (every protocol)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["models"]["simulated-weak"]["noise_sd"] = 0.07  # what -S ++models...noise_sd does
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _resolve(root)
    status = _dvc(root, "status", *old)
    assert all(s in status for s in _stages("simulated-weak")), status
    assert not any(s in status for s in _stages("simulated-strong")), status
