"""Helpers of the release tests' project: the faces and variations stages (the dataset
tests' fake generator: 16-px images, one value refused), then the real judge and scores
stages of the demo's simulated judge on two scenarios. Built once per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stylisticbias.config import compose

DATASET_TESTS = Path(__file__).parents[1] / "dataset"
REFUSED = "Daring / Provocative"


def project_params(**release: Any) -> dict[str, Any]:
    """The demo configuration on 3 faces with the fake generator."""
    params = compose(["faces.n=3", "model=[simulated-weak]", "judge.scenarios=[1,2]"])
    params["generator"] = {
        "_target_": "fake_generator.FakeGenerator",
        "workers": 1,
        "refuse": [REFUSED],
    }
    params["tracking"]["enabled"] = False
    params["release"].update(release)
    return params
