"""Each judge@MODEL stage depends on its own model only (data/config/judge/MODEL.yaml)."""

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
        assert "data/config/judge/${key}.yaml" in stages[name]["do"]["deps"]
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
    for rel in ("data/faces", "data/variations", "data/import"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "x.parquet").write_bytes(rel.encode())
    (tmp_path / "data/qa").mkdir(parents=True)
    (tmp_path / "data/qa/checks.parquet").write_bytes(b"qa")  # qa.policy=exclude reads it
    _dvc(tmp_path, "init", "--no-scm", "-q")
    return tmp_path


def _compose(root: Path, models: list[str]) -> None:
    """What the check stage writes for the view of ``model=[models]``."""
    from stylisticbias.params_view import compose_view, dump_view

    view = compose_view([f"model=[{','.join(models)}]"])
    (root / "params.yaml").write_text(dump_view(view))
    _resolve(root)


def _resolve(root: Path) -> None:
    from stylisticbias.stage_inputs import write_stage_inputs

    view = yaml.safe_load((root / "params.yaml").read_text())
    write_stage_inputs(config.full_params(view), root)


def test_adding_a_model_leaves_other_judge_stages_up_to_date(dvc_project: Path) -> None:
    root = dvc_project
    _compose(root, ["simulated-strong", "simulated-weak"])
    for m in ("simulated-strong", "simulated-weak"):
        (root / "data" / "judgments" / m).mkdir(parents=True)
        (root / "data" / "judgments" / m / "judgments.parquet").write_bytes(m.encode())
        _dvc(root, "commit", "-f", "-q", f"judge@{m}")
    assert "judge@" not in _dvc(root, "status", "judge@simulated-strong", "judge@simulated-weak")

    _compose(root, ["simulated-strong", "simulated-weak", "qwen3-vl-8b"])
    status = _dvc(root, "status", "judge@simulated-strong", "judge@simulated-weak")
    assert "judge@simulated" not in status, status  # the existing stages stay up to date
    new = _dvc(root, "status", "judge@qwen3-vl-8b")
    assert "judge@qwen3-vl-8b" in new  # the added model's stage is new

    # and a change to one model's settings stales that model's stage only
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["models"]["simulated-weak"]["noise_sd"] = 0.07  # what -S ++models...noise_sd does
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _resolve(root)
    status = _dvc(root, "status", "judge@simulated-strong", "judge@simulated-weak")
    assert "judge@simulated-weak" in status and "judge@simulated-strong" not in status, status
