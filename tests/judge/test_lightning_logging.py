"""Lightning's log lines reach stderr once each, without its litlogger tip (the judge stage,
and either import order of Lightning and :func:`stylisticbias.cli.setup_logging`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from judge_tables import judge_with, make_tables

from stylisticbias.config import dump_params

ROOT = Path(__file__).resolve().parents[2]
# "INFO stylisticbias.judge.run: msg" (ours), "INFO: msg" (Lightning's handler), or bare "msg"
_PREFIX = re.compile(r"^(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?: [\w.]+)?: )?")
_AD = "litlogger"


def _messages(stderr: str) -> Counter[str]:
    """Each stderr line with its level/logger prefix removed, counted."""
    return Counter(_PREFIX.sub("", ln).strip() for ln in stderr.splitlines() if ln.strip())


def _env() -> dict[str, str]:
    src = str(ROOT / "src")
    return {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def test_judge_stage_prints_each_lightning_line_once(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    os.symlink(ROOT / "conf", project / "conf")
    params = make_tables(project / "data", 1)
    judge_with(params, "simulated-weak", runner="lightning")  # (alone it needs no Trainer)
    (project / "params.yaml").write_text(dump_params(params), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "pipelines" / "judge.py"), "simulated-weak"],
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    counts = _messages(proc.stderr)
    gpu = [m for m in counts if m.startswith("GPU available:")]
    assert len(gpu) == 1 and counts[gpu[0]] == 1, proc.stderr  # Lightning spoke, once
    twice = {m: n for m, n in counts.items() if n > 1}
    assert not twice, f"printed more than once: {twice}\n{proc.stderr}"
    assert _AD not in proc.stderr + proc.stdout
    assert "is deprecated" not in proc.stderr  # Lightning's pytree helper vs. newer torch


_SCRIPTS = {
    # (a stage -- root handler first, Lightning imported later by the runner -- is the test above)
    # Lightning imported before the root handler exists
    "import_then_setup": """
import lightning.pytorch
from stylisticbias.cli import setup_logging
setup_logging()
""",
    # library use, no logging set up: Lightning's own handlers print, still once, no ad
    "library": """
import stylisticbias.judge.lightning_runner
""",
}


# a fresh interpreter each (Lightning + torch imports: seconds); "library" in make test, the
# other order in the slow tier (the stage order is the test above)
@pytest.mark.parametrize(
    "order",
    [
        pytest.param(o, marks=[pytest.mark.slow] if o != "library" else [], id=o)
        for o in sorted(_SCRIPTS)
    ],
)
def test_lightning_lines_once_in_any_import_order(order: str) -> None:
    script = _SCRIPTS[order] + (
        "from lightning.pytorch.utilities.rank_zero import rank_zero_info\n"
        "rank_zero_info('GPU available: probe')\n"
        f"rank_zero_info('Tip: try installing [{_AD}]')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    counts = _messages(proc.stderr)
    assert counts["GPU available: probe"] == 1, proc.stderr
    assert _AD not in proc.stderr
