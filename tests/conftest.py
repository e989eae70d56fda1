"""Shared fixtures: composed params, the benchmark definition and the real analysis of small
simulated data (:func:`analysed`).

Keeping ``make test`` under 3 minutes (README "Development"): build anything expensive once per
session here (``scope="session"``, memoised per argument like :func:`analysed`) and copy it
into ``tmp_path`` in a cheap per-test fixture (``tests/report/conftest.py``); get tiny
checkpoints from ``stylisticbias_dev.tiny.ensure_built`` (one build per builder hash, shared by
every checkout); parametrise per-architecture exactness tests with
``tests/judge/tiny_arch_params.arch_params`` (one architecture in ``make test``, the rest slow);
call library functions in-process unless the test is about the subprocess (exit status, one
error line, SIGKILL); mark whole ``dvc repro`` runs, SIGKILLs and benchmark-sized inputs
``@pytest.mark.slow`` and keep a small check of the same kind in the default tier."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from stylisticbias.analysis.calibration import synthetic_dataset
from stylisticbias.analysis.run import run_analysis
from stylisticbias.benchmark import Benchmark, benchmark_from_params
from stylisticbias.config import available, compose, load_group_option
from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine, image_attrs
from stylisticbias.score_store import write_model_scores
from stylisticbias.scores import compute_scores
from stylisticbias.spec.parse import config_from_params
from stylisticbias_dev.mlflow_db import template_stores
from stylisticbias_dev.worker_threads import limit_threads


@pytest.fixture(scope="session")
def default_params() -> dict[str, Any]:
    """conf/ composed with no overrides (the demo experiment)."""
    return compose()


@pytest.fixture(scope="session")
def benchmark(default_params: dict[str, Any]) -> Benchmark:
    """The paper's benchmark definition."""
    return benchmark_from_params(default_params)


N_FACES = 10  # small, but every demographic dimension has at least two groups
BASES = ("simulated-strong", "simulated-weak")  # judge configs, cycled over the model names


def _judgments(
    params: dict[str, Any],
    benchmark: Benchmark,
    faces: pd.DataFrame,
    var: pd.DataFrame,
    name: str,
    i: int,
) -> pd.DataFrame:
    """Judgment records of one model: the simulated judge ``BASES[i % 2]`` under ``name``."""
    cfg = load_group_option("model", BASES[i % len(BASES)])
    cfg.update(name=name, seed=int(cfg.get("seed", 0)) + 100 * i)
    eng = SimulatedJudgeEngine(cfg, cfg["engine"], params["judge"], benchmark)
    img = image_attrs(faces, var)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].astype(object)
    attrs = attrs.where(attrs.notna(), None).to_dict("records")
    return eng.judge_records(img["image_id"].tolist(), img["face_id"].tolist(), attrs)


def output_path(root: Path, params: dict[str, Any], key: str) -> Path:
    """Where ``params``' ``paths.<key>`` (relative to the project root) lies under ``root``:
    ``root/reports/<protocol>`` for ``reports``, ``root/data/<protocol>/scores`` for ``scores``."""
    return root / params["paths"][key]


def analyse(
    root: Path, params: dict[str, Any], models: tuple[str, ...], simulated: bool
) -> dict[str, Any]:
    """Judge, score and analyse ``models`` under ``root`` (paths relative to it); the params."""
    params = copy.deepcopy(params)
    benchmark = benchmark_from_params(params)
    faces, var = synthetic_dataset(benchmark, N_FACES, seed=3)
    judgments, scores = output_path(root, params, "judgments"), output_path(root, params, "scores")
    for i, name in enumerate(models):
        j = _judgments(params, benchmark, faces, var, name, i)
        j["simulated"] = simulated
        jp = judgments / name / "judgments.parquet"
        jp.parent.mkdir(parents=True, exist_ok=True)
        j.to_parquet(jp, index=False)
        write_model_scores(compute_scores(j, faces, var, benchmark), scores, name)
    params["models"] = {  # a conf/model name keeps its section (paper name, hub id)
        name: load_group_option("model", name)
        if name in available("model")
        else {**load_group_option("model", BASES[i % len(BASES)]), "name": name}
        for i, name in enumerate(models)
    }
    run = copy.deepcopy(params)
    run["paths"].update(
        scores=str(scores),
        judgments=str(judgments),
        reports=str(output_path(root, params, "reports")),
        analysis_cache=None,
    )
    run_analysis(config_from_params(run))
    return params


@pytest.fixture(scope="session")
def analysed(
    tmp_path_factory: pytest.TempPathFactory, default_params: dict[str, Any]
) -> Callable[[tuple[str, ...], bool], tuple[Path, dict[str, Any]]]:
    """The real ``analyze`` stage on small simulated data, once per (models, simulated) a
    session: returns (root holding the judgments, scores and reports where the params' ``paths``
    name them -- ``data/<protocol>/{judgments,scores}``, ``reports/<protocol>/`` -- and those
    params, with paths relative to root). Each model is a simulated judge (the demo's strong
    and weak ones in turn, re-seeded) on :data:`N_FACES` synthetic faces; ``simulated=False``
    relabels its rows as not simulated (to exercise the real-model path on the same data)."""
    params = copy.deepcopy(default_params)
    params["analysis"]["bootstrap"]["n_resamples"] = 50
    params["analysis"]["n_permutations"] = 50
    done: dict[tuple[tuple[str, ...], bool], tuple[Path, dict[str, Any]]] = {}

    def get(models: tuple[str, ...], simulated: bool) -> tuple[Path, dict[str, Any]]:
        key = (models, simulated)
        if key not in done:
            root = tmp_path_factory.mktemp("analysis")
            done[key] = (root, analyse(root, params, models, simulated))
        return done[key]

    return get


@pytest.fixture(scope="session", autouse=True)
def _mlflow_template_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every new MLflow SQLite store a test opens in this process is a copy of one empty store
    that MLflow created and migrated once per session (``stylisticbias_dev.mlflow_db``):
    milliseconds instead of seconds of schema migrations per store."""
    with template_stores(tmp_path_factory.mktemp("mlflow-template")):
        yield


# ---- the project's own outputs are never a test's scratch space ------------------------------
#: what the guard watches: the DVC outputs and reports a user's `make repro` produced
_WATCHED = ("data", "reports")


def _outputs_snapshot() -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file under the project's ``data/`` and ``reports/``."""
    root = Path(__file__).resolve().parents[1]
    out: dict[str, tuple[int, int]] = {}
    for top in _WATCHED:
        for p in (root / top).rglob("*"):
            try:
                st = p.lstat()
            except FileNotFoundError:  # removed while we walk
                continue
            if not p.is_dir():
                out[p.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def pytest_configure(config: pytest.Config) -> None:
    """In each xdist worker: one core's worth of BLAS/OpenMP threads (spinning pools of two
    workers on two cores cost several times the CPU; ``stylisticbias_dev.worker_threads``).
    And no DVC usage analytics: every ``dvc`` command a test runs would otherwise leave a
    detached ``dvc daemon analytics`` process behind (~0.4 CPU-s each, unseen by the test)."""
    limit_threads()
    os.environ.setdefault("DVC_NO_ANALYTICS", "1")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Snapshot the project's outputs (the xdist controller and each worker alike)."""
    session.config.stash[_SNAPSHOT] = _outputs_snapshot()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a test created, changed or deleted a file under the project's
    ``data/`` or ``reports/``: tests write into their tmp dirs, never into the DVC outputs of
    the user's checkout (a test once replaced the demo's analysis cache with its own)."""
    before = session.config.stash.get(_SNAPSHOT, None)
    if before is None:
        return
    after = _outputs_snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        more = f" and {len(changed) - 10} more" if len(changed) > 10 else ""
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        msg = f"error: the tests changed the project's own outputs: {', '.join(changed[:10])}{more}"
        if tr is not None:
            tr.write_line(msg, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_SNAPSHOT = pytest.StashKey[dict[str, tuple[int, int]]]()
