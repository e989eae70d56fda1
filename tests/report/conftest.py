"""The real ``analyze`` stage's output on small data, for the report tests.

No hand-built tables: a few synthetic faces (the paper's demographic marginals, the evaluated
variations) are judged by the simulated engine -- one simulated judge per model name, with the
demo's planted effects at full or 40% strength -- their scores are computed as the ``scores``
stage does, and :func:`stylisticbias.analysis.run.run_analysis` writes ``reports/tables/*.csv``
(every table validated against the table registry) and ``reports/metrics.json``. Each model set
is analysed once per session (``analysed`` in tests/conftest.py) and copied into the test's
``tmp_path``.

``simulated=False`` relabels the judged rows as not simulated (``simulated`` column of the
judgments and scores) so that the report's real-model path (no SIMULATED banner, comparison
with the paper for the paper's short model names) runs on the same data.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def analysis_output(
    tmp_path: Path, analysed: Callable[[tuple[str, ...], bool], tuple[Path, dict[str, Any]]]
) -> Callable[..., dict[str, Any]]:
    """Factory: ``analysis_output(models, simulated=True)`` puts the real analysis of ``models``
    (reports/tables, reports/metrics.json, data/scores, data/judgments) into ``tmp_path`` and
    returns params for a report there (tracking to ``tmp_path/mlflow.db``)."""

    def make(models: list[str], simulated: bool = True) -> dict[str, Any]:
        src, params = analysed(tuple(models), simulated)
        for sub in ("reports", "data"):
            shutil.copytree(src / sub, tmp_path / sub, dirs_exist_ok=True)
        params = json.loads(json.dumps(params))
        params["tracking"] = {
            **params["tracking"],
            "enabled": True,
            "tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}",
            "experiment_name": "stylisticbias-test",
        }
        return params

    return make


@pytest.fixture
def fake_analysis(analysis_output: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The former name of :func:`analysis_output` (kept for tests written against it)."""
    return analysis_output
