"""The real ``analyze`` stage's output on small data, for the report tests.

No hand-built tables: a few synthetic faces (the paper's demographic marginals, the evaluated
variations) are judged by the simulated engine -- one simulated judge per model name, with the
demo's planted effects at full or 40% strength -- their scores are computed as the ``scores``
stage does, and :func:`stylisticbias.analysis.run.run_analysis` writes ``tables/*.csv`` (every
table validated against the table registry) and ``metrics.json`` into the params'
``paths.reports`` (``reports/<protocol>``; read it as ``tmp_path / params["paths"]["reports"]``).
Each model set is analysed once per session (``analysed`` in tests/conftest.py) and copied into
the test's ``tmp_path``; ``report_output`` adds that analysis's report (``build_report``, also
once per session and model set).

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

from stylisticbias.config import project_root
from stylisticbias.report.run import build_report
from stylisticbias.spec.parse import config_from_params


@pytest.fixture
def analysis_output(
    tmp_path: Path, analysed: Callable[[tuple[str, ...], bool], tuple[Path, dict[str, Any]]]
) -> Callable[..., dict[str, Any]]:
    """Factory: ``analysis_output(models, simulated=True)`` puts the real analysis of ``models``
    (tables, metrics.json, scores, judgments: where the params' ``paths`` name them, e.g.
    ``reports/stylisticbias/tables``) into ``tmp_path`` and returns those params, relative to
    ``tmp_path``, for a report there (tracking to ``tmp_path/mlflow.db``)."""

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


@pytest.fixture(scope="session")
def built_reports(
    tmp_path_factory: pytest.TempPathFactory,
    analysed: Callable[[tuple[str, ...], bool], tuple[Path, dict[str, Any]]],
) -> Callable[[tuple[str, ...], bool], Path]:
    """``build_report`` on ``analysed(models, simulated)``, once per session: the root holding
    its ``paths.reports`` (tables, metrics, figures, README.md) and ``conf/reference``."""
    done: dict[tuple[tuple[str, ...], bool], Path] = {}

    def get(models: tuple[str, ...], simulated: bool) -> Path:
        key = (models, simulated)
        if key not in done:
            src, params = analysed(models, simulated)
            root = tmp_path_factory.mktemp("report")
            for sub in ("reports", "data"):
                shutil.copytree(src / sub, root / sub)
            shutil.copytree(project_root() / "conf" / "reference", root / "conf" / "reference")
            # tracking on, to the build's own store: the report stage must not log (the track
            # stage does; test_report_stage_alone_logs_nothing looks for this store)
            store = f"sqlite:///{root / 'mlflow.db'}"
            track = {**params["tracking"], "enabled": True, "tracking_uri": store}
            params = {**params, "tracking": track}
            build_report(config_from_params(params), root)
            readme = (root / params["paths"]["reports"] / "README.md").read_text(encoding="utf-8")
            assert str(root) not in readme  # what makes a copy elsewhere the same report
            done[key] = root
        return done[key]

    return get


@pytest.fixture
def report_output(
    tmp_path: Path,
    analysis_output: Callable[..., dict[str, Any]],
    built_reports: Callable[[tuple[str, ...], bool], Path],
) -> Callable[..., dict[str, Any]]:
    """Factory: ``report_output(models, simulated=True)`` is :func:`analysis_output` plus the
    report built from it (``README.md`` and figures in ``paths.reports``, ``conf/reference``) in
    ``tmp_path``: what the ``report`` stage leaves for the ``track`` stage. The params track to
    ``tmp_path/mlflow.db``."""

    def make(models: list[str], simulated: bool = True) -> dict[str, Any]:
        params = analysis_output(models, simulated)
        built = built_reports(tuple(models), simulated)
        shutil.copytree(built / "reports", tmp_path / "reports", dirs_exist_ok=True)
        shutil.copytree(built / "conf", tmp_path / "conf", dirs_exist_ok=True)
        return params

    return make
