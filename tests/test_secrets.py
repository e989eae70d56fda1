"""Security, end to end: a canary API key set in the environment of every stage appears nowhere
the pipeline writes (data/, reports/, params.yaml, dvc.lock, the MLflow store and its artifact
directories, the DVC cache, logs, stdout/stderr) -- also when an API generator fails with it.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from test_pipeline_e2e import _copy_project, _env

#: random per test session, so this file's own copy in the project never matches
CANARY = f"sk-canary-{secrets.token_hex(16)}"
KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN")


def _run(project: Path, *cmd: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=project, env=env, capture_output=True, text=True)


def _leaks(project: Path, outputs: list[str]) -> list[str]:
    """Files under ``project`` (and captured outputs) that contain the canary, in any form."""
    needles = [CANARY.encode(), CANARY.encode("utf-16-le"), CANARY[3:].encode()]
    found = [f"output #{i}" for i, text in enumerate(outputs) if CANARY[3:] in text]
    for path in sorted(project.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(n in data for n in needles):
                found.append(str(path.relative_to(project)))
    return found


@pytest.mark.slow  # a whole dvc repro: ~3 min on 2 shared cores (make test-all)
def test_canary_key_appears_nowhere_the_pipeline_writes(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "proj")
    env = {**_env(), **dict.fromkeys(KEY_VARS, CANARY)}
    py = sys.executable
    compose = [py, "-m", "stylisticbias.configure", "compose"]
    outputs: list[str] = []
    small = [
        "faces.n=3",
        "judge.seeds=[1]",
        "model=[simulated-strong]",
        "protocols=[stylisticbias]",
    ]
    proc = _run(project, *compose, *small, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _run(project, "dvc", "repro", env=env)
    outputs += [proc.stdout, proc.stderr]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (project / "mlflow.db").exists() and any((project / "mlruns").rglob("README.md"))
    # an API generator that uses the key and fails (nothing listens on its endpoint)
    offline = ["generator.max_retries=0", "generator.base_url=http://127.0.0.1:9/"]
    proc = _run(project, *compose, *small, "generator=gemini", *offline, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _run(project, "dvc", "repro", "faces", env=env)
    outputs += [proc.stdout, proc.stderr]
    assert proc.returncode != 0  # offline: a transient error fails the stage
    assert not _leaks(project, outputs), _leaks(project, outputs)


@pytest.mark.parametrize("text", [CANARY, f"x{CANARY[3:]}y"], ids=["key", "embedded"])
def test_the_leak_check_finds_the_canary(tmp_path: Path, text: str) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "run.log").write_text(f"key={text}\n")
    assert _leaks(tmp_path, []) == ["data/run.log"]
    assert _leaks(tmp_path / "data", [f"echo {text}"]) == ["output #0", "run.log"]
