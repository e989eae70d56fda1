"""What a sweep job runs: model selection, dataset keys, the sweep plan, names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from stylisticbias.config import compose
from stylisticbias.errors import StylisticBiasError
from stylisticbias.sweep.spec import (
    DATASET_KEYS,
    DATASET_LINKS,
    JOB_PATHS,
    NESTED_SAMPLER,
    dataset_key,
    dataset_params,
    job_name,
    job_params,
    judged_models,
    metric_key,
    plan_sweep,
    relative_link,
    select_model,
    with_paths,
)

ROOT = Path(__file__).resolve().parents[2]
#: MLflow's rule for metric and param names (mlflow.utils.validation)
MLFLOW_NAME = re.compile(r"^[/\w.\- :]*$")


@pytest.fixture(scope="module")
def sweep_params() -> dict[str, Any]:
    return compose(["model=simulated-weak"], config_name="sweep")


def test_sweep_config_selects_one_model(sweep_params: dict[str, Any]) -> None:
    assert list(sweep_params["models"]) == ["simulated-weak"]  # model=simulated-weak
    params = select_model(sweep_params)
    assert "model" not in params and "sweep" not in params
    assert judged_models(params) == ["simulated-weak"]
    # model=[a,b] judges both in one job
    both = select_model(compose(["model=[simulated-weak,simulated-strong]"], "sweep"))
    assert judged_models(both) == ["simulated-weak", "simulated-strong"]


def test_dataset_keys_are_what_the_dataset_stages_read() -> None:
    """Every setting a sweep keys its shared datasets by is one DVC re-runs the dataset stages
    on (data/config/<protocol>/dataset.yaml), and each protocol's faces/variations stages
    depend on that file."""
    from stylisticbias.stage_inputs import GROUPS

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for s in ("faces", "variations"):  # one stage per protocol (foreach ... do)
        assert "data/config/${key}/dataset.yaml" in stages[s]["do"]["deps"]
    dataset = next(g for g in GROUPS if g.name == "dataset")
    assert "conf/benchmark/{protocol}.yaml" in dataset.inputs  # the protocol file
    covered = set(dataset.settings)
    linked = [k for link in DATASET_LINKS for k in link]
    assert all(k in covered or k.split(".", 1)[0] in covered for k in (*DATASET_KEYS, *linked))


def test_dataset_key_ignores_judging_and_follows_the_dataset() -> None:
    base = job_params(compose(["model=simulated-strong", "faces.n=3"], "sweep"), None)
    other_judge = job_params(
        compose(["model=simulated-weak", "faces.n=3", "judge.seeds=[2]"], "sweep"), None
    )
    bigger = job_params(compose(["model=simulated-strong", "faces.n=4"], "sweep"), None)
    restyled = job_params(compose(["model=simulated-strong", "faces.n=3", "seed=1"], "sweep"), None)
    assert dataset_key(base) == dataset_key(other_judge)
    assert len({dataset_key(base), dataset_key(bigger), dataset_key(restyled)}) == 3


def test_jobs_in_their_own_dirs_share_a_dataset_build(tmp_path: Path) -> None:
    """Jobs differing only in model and judge seeds, each with its paths in its own directory
    (as the sweep runs them), key one dataset build, whose gallery links the QA badges by the
    same relative path as each job's own (``paths.variations`` -> ``paths.qa``)."""
    jobs = [
        with_paths(job_params(compose(overrides, "sweep"), None), tmp_path / str(i), JOB_PATHS)
        for i, overrides in enumerate(
            (
                ["model=simulated-strong", "judge.seeds=[1]"],
                ["model=simulated-strong", "judge.seeds=[2]"],
                ["model=tiny-qwen3-vl", "judge.seeds=[1]"],
            )
        )
    ]
    keys = {dataset_key(j) for j in jobs}
    assert len(keys) == 1
    key = keys.pop()
    assert dataset_key(job_params(compose(["model=simulated-weak"], "sweep"), None)) == key
    build = dataset_params(jobs[0], tmp_path / "datasets", key)
    assert dataset_key(build) == key  # the build is the dataset its jobs key
    link = relative_link(build, "paths.variations", "paths.qa")
    assert link == relative_link(jobs[2], "paths.variations", "paths.qa") == "../qa"
    assert Path(build["paths"]["qa"]) == tmp_path / "datasets" / key / "qa"
    # the gallery's link really differs where the QA folder lies elsewhere
    moved = with_paths(jobs[0], tmp_path / "0", {"qa": "qa"})
    assert dataset_key(moved) != key


def test_job_paths_lie_in_the_job_dir(tmp_path: Path, sweep_params: dict[str, Any]) -> None:
    params = with_paths(select_model(sweep_params), tmp_path / "3", JOB_PATHS)
    for key, rel in JOB_PATHS.items():
        assert Path(params["paths"][key]) == (tmp_path / "3" / rel).resolve()


def test_plan_names_swept_keys_and_nests_a_faces_sweep() -> None:
    plan = plan_sweep(["model=a,b", "judge.seeds=[1],[2]", "faces.n=4", "hydra/launcher=joblib"])
    assert plan.swept == ("model", "judge.seeds") and plan.sampler is None
    assert plan.overrides == ("model=a,b", "judge.seeds=[1],[2]", "faces.n=4")
    assert plan_sweep(["faces.n=4,8"]).sampler == NESTED_SAMPLER
    assert plan_sweep(["faces.n=4,8", f"faces.sampler={NESTED_SAMPLER}"]).sampler == NESTED_SAMPLER
    with pytest.raises(StylisticBiasError, match=r"faces\.n is swept.*paper_nested"):
        plan_sweep(["faces.n=4,8", "faces.sampler=uniform"])
    with pytest.raises(StylisticBiasError, match="bad override") as err:
        plan_sweep(["model=a,,b]"])
    assert "\n" not in str(err.value)


def test_job_params_apply_the_nested_sampler(sweep_params: dict[str, Any]) -> None:
    assert job_params(sweep_params, None)["faces"]["sampler"] == "paper_marginals"
    assert job_params(sweep_params, NESTED_SAMPLER)["faces"]["sampler"] == NESTED_SAMPLER


def test_job_names_and_metric_keys() -> None:
    task = ["model=simulated-weak", "judge.seeds=[2]", "faces.n=4"]
    assert job_name(task, ["model", "judge.seeds"]) == "model=simulated-weak judge.seeds=[2]"
    assert job_name(task, []) == "model=simulated-weak judge.seeds=[2] faces.n=4"
    assert job_name([], []) == "defaults"
    key = metric_key("model=simulated-weak judge.seeds=[1,2]")
    assert key == "model:simulated-weak judge.seeds:1_2" and MLFLOW_NAME.match(key)
