"""Each judge@MODEL stage records and depends on its own model only (dvc.lock, dvc status)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stylisticbias import config


def _dvc(root: Path, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_committed_lock_holds_no_other_models_settings() -> None:
    lock = yaml.safe_load((config.project_root() / "dvc.lock").read_text())
    judge = {k: v for k, v in lock["stages"].items() if k.startswith("judge@")}
    assert judge, "no judge stage in dvc.lock"
    for stage, body in judge.items():
        model = stage.split("@", 1)[1]
        params = body["params"]["params.yaml"]
        models = {k.split(".", 1)[1] for k in params if k.startswith("models.")}
        assert models == {model}, (stage, sorted(params))
        assert "models" not in params and "engine" not in params
        assert "judge" not in params, "the whole judge section would include other settings"


@pytest.fixture()
def dvc_project(tmp_path: Path) -> Path:
    """A DVC project with our dvc.yaml, conf/ and the judge stages' deps (tiny stand-ins for
    data), each judge stage committed as if it had run."""
    root = config.project_root()
    for rel in ("conf", "pipelines", "src/stylisticbias/judge", "src/stylisticbias/qa"):
        shutil.copytree(root / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "dvc.yaml", tmp_path / "dvc.yaml")
    for rel in ("data/faces", "data/variations", "data/import"):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "x.parquet").write_bytes(rel.encode())
    (tmp_path / "data/qa").mkdir(parents=True)
    (tmp_path / "data/qa/checks.parquet").write_bytes(b"qa")  # qa.policy=exclude reads it
    (tmp_path / "data/check").mkdir(parents=True)
    (tmp_path / "data/check/params.ok").write_bytes(b"ok")  # the check stage's stamp
    _dvc(tmp_path, "init", "--no-scm", "-q")
    return tmp_path


def _compose(root: Path, models: list[str]) -> None:
    params = config.compose([f"model=[{','.join(models)}]"])
    (root / "params.yaml").write_text(config.dump_params(params))


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
    params["models"]["simulated-weak"]["noise_sd"] = 0.07
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    status = _dvc(root, "status", "judge@simulated-strong", "judge@simulated-weak")
    assert "judge@simulated-weak" in status and "judge@simulated-strong" not in status, status
