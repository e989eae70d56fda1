"""A byte that is not UTF-8 in a configuration file (any file of ``conf/``, ``params.yaml``) is
one line naming the file and the byte's offset, exit status 2 -- from ``configure compose``,
``configure check`` and the ``check`` stage, and from every reader of such a file; a malformed
``params.yaml`` is one line too."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stylisticbias.config import ROOT
from stylisticbias_dev.project_copy import tool_env

#: what is inserted after a file's first line: ``é`` in Latin-1 (0xe9 starts no UTF-8 sequence)
BAD = b"# caf\xe9\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A scratch project: a copy of ``conf/`` and ``params.yaml``, the real ``pipelines/``."""
    shutil.copytree(ROOT / "conf", tmp_path / "conf")
    shutil.copy2(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "pipelines").symlink_to(ROOT / "pipelines")
    return tmp_path


def _corrupt(project: Path, rel: str) -> str:
    """Insert :data:`BAD` after the first line of ``rel``; the one line expected about it."""
    path = project / rel
    raw = path.read_bytes()
    cut = raw.index(b"\n") + 1
    path.write_bytes(raw[:cut] + BAD + raw[cut:])
    return f"{rel}: not UTF-8 text: byte 0xe9 at offset {cut + 5} (line 2)"


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {"pipelines", ".locks"} & set(p.relative_to(root).parts)
    }


def _readers() -> dict[str, tuple[str, Callable[[Path], Any]]]:
    """Each reader of a configuration file: the file it reads -> a call reading it."""
    from stylisticbias import config, params_view
    from stylisticbias.benchmark import load_benchmark
    from stylisticbias.judge.engines.simulated.planted import load_planted
    from stylisticbias.judge.protocol import settings
    from stylisticbias.soda.demo import load_planted as load_soda_planted
    from stylisticbias.soda.protocol import load_soda

    def judge_defaults(_: Path) -> Any:
        settings._defaults.cache_clear()
        try:
            return settings._defaults()
        finally:
            settings._defaults.cache_clear()

    return {
        "compose": ("conf/config.yaml", lambda p: config.compose([])),
        "compose-model": ("conf/model/simulated-strong.yaml", lambda p: config.compose([])),
        # a file the composition does not use is checked too: conf/ is one configuration
        "compose-unused": ("conf/benchmark/beauty-and-the-bias.yaml", lambda p: config.compose()),
        "view-root": ("conf/config.yaml", lambda p: params_view.view_conf_files()),
        "view-model": ("conf/model/simulated-weak.yaml", lambda p: params_view.view_conf_files()),
        "view-drift": ("conf/dvc/config.yaml", lambda p: params_view.view_conf_drift()),
        "annotator": (
            "conf/annotator/simulated-annotator.yaml",
            lambda p: config.load_group_option("annotator", "simulated-annotator"),
        ),
        "protocol": (
            "conf/benchmark/stylisticbias.yaml",
            lambda p: load_benchmark("stylisticbias"),
        ),
        "planted": (
            "conf/planted/default.yaml",
            lambda p: load_planted("conf/planted/default.yaml", None),  # type: ignore[arg-type]
        ),
        "soda": ("conf/benchmark/soda.yaml", lambda p: load_soda("soda")),
        "soda-planted": (
            "conf/soda/planted.yaml",
            lambda p: load_soda_planted(p / "conf/soda/planted.yaml"),
        ),
        "judge-defaults": ("conf/config.yaml", judge_defaults),
        "params": ("params.yaml", lambda p: config.load_params(p / "params.yaml")),
    }


@pytest.mark.parametrize("reader", list(_readers()))
def test_every_reader_names_the_file_and_the_offset(
    project: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    from stylisticbias.errors import StylisticBiasError

    rel, read = _readers()[reader]
    monkeypatch.chdir(project)  # the project root: the scratch copy
    monkeypatch.delenv("STYLISTICBIAS_PARAMS", raising=False)
    want = _corrupt(project, rel)
    with pytest.raises(StylisticBiasError) as info:
        read(project)
    message = str(info.value)
    assert len(message.splitlines()) == 1 and message.startswith(want), message


def _run(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**tool_env(), "PYTHONPATH": str(ROOT / "src")}
    env.pop("STYLISTICBIAS_PARAMS", None)
    return subprocess.run(
        [sys.executable, *argv], cwd=project, env=env, capture_output=True, text=True
    )


COMMANDS = {
    "compose": ("-m", "stylisticbias.configure", "compose"),
    "check": ("-m", "stylisticbias.configure", "check"),
    "stage": ("pipelines/check.py",),
}


@pytest.mark.parametrize(
    ("command", "rel"),
    [
        ("compose", "conf/model/simulated-strong.yaml"),
        ("check", "conf/model/simulated-strong.yaml"),
        ("stage", "conf/model/simulated-strong.yaml"),
        ("compose", "conf/config.yaml"),
        ("check", "conf/dvc/config.yaml"),
        ("stage", "conf/benchmark/stylisticbias.yaml"),
        ("check", "params.yaml"),
        ("stage", "params.yaml"),
    ],
)
def test_commands_refuse_a_bad_byte_in_one_line_and_write_nothing(
    project: Path, command: str, rel: str
) -> None:
    want = _corrupt(project, rel)
    before = _tree(project)
    proc = _run(project, *COMMANDS[command])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"error: {want}" in lines[0], proc.stderr
    assert _tree(project) == before  # nothing written: no params.yaml, conf/dvc/, data/config


@pytest.mark.parametrize("command", ["check", "stage"])
def test_a_malformed_params_file_is_one_line(project: Path, command: str) -> None:
    with (project / "params.yaml").open("a", encoding="utf-8") as f:
        f.write("faces:\n  n: 3\n bad: [\n")
    proc = _run(project, *COMMANDS[command])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "error: params.yaml: not valid YAML: line " in lines[0], lines[0]
    assert "did not find expected key" in lines[0], lines[0]
