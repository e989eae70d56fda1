"""A small real project for the release tests: the faces and variations stages (the dataset
tests' fake generator: 16-px images, one value refused), then the real judge and scores
stages of the demo's simulated judge on two scenarios. Built once per session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from release_project import DATASET_TESTS, project_params

from stylisticbias.config import project_root
from stylisticbias.dataset.build import build_faces, build_variations
from stylisticbias.judge.run import run_judge
from stylisticbias.scores import write_scores
from stylisticbias.spec.parse import config_from_params


@pytest.fixture(scope="session")
def built_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project folder (conf/ copied, data/ built), once per session."""
    root = tmp_path_factory.mktemp("release-project")
    shutil.copytree(project_root() / "conf", root / "conf")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.syspath_prepend(str(DATASET_TESTS))
        params = project_params()
        build_faces(config_from_params(params))
        build_variations(config_from_params(params))
        config = config_from_params(params)
        run_judge("simulated-weak", config)
        write_scores("simulated-weak", config)
    return root


@pytest.fixture
def project(built_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The built project as the working directory."""
    monkeypatch.chdir(built_project)
    monkeypatch.syspath_prepend(str(DATASET_TESTS))
    return built_project
