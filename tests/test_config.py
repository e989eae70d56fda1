"""conf/ composes, params.yaml is in sync with it, and bad names give one clear error."""

from __future__ import annotations

import pytest
import yaml

from stylisticbias import config, configure
from stylisticbias.config import compose, load_group_option
from stylisticbias.errors import StylisticBiasError


@pytest.fixture(scope="module")
def model_sections() -> dict[str, dict]:
    """Every ``conf/model/*.yaml`` composed with its engine, in one composition."""
    return config.load_models(config.available("model"))


@pytest.fixture(scope="module")
def experiments() -> dict[str, dict]:
    """Every ``conf/experiment/*.yaml``: conf/ composed with ``experiment=<name>``."""
    return {name: compose([f"experiment={name}"]) for name in config.available("experiment")}


def test_params_yaml_in_sync_with_conf() -> None:
    """params.yaml is the view of conf/ (conf/dvc/ generated from conf/), and stands for the
    whole composed configuration."""
    from stylisticbias.params_view import view_conf_drift

    assert view_conf_drift() == [], (
        "conf/dvc/ drifted: run `python -m stylisticbias.configure compose`"
    )
    committed = yaml.safe_load((config.project_root() / "params.yaml").read_text())
    view, full = configure.compose_view()
    assert committed == view, (
        "params.yaml drifted from conf/: run `python -m stylisticbias.configure compose`"
    )
    assert config.full_params(committed) == full == compose()


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["model=[simulated-strong]"],
        ["faces.n=8", "judge.seeds=[2]"],
        ["qa.policy=exclude", "analysis.alpha=0.01"],
        ["models.simulated-weak.noise_sd=0.07"],
        ["generator=import", "tracking=none"],
        ["annotator=[]"],
        ["model=[simulated-weak]", "protocol=reflect", "faces.sampler=uniform"],
    ],
)
def test_the_view_stands_for_conf_composed_with_the_same_overrides(overrides: list[str]) -> None:
    """What `dvc exp run -S` writes (the view composed from conf/dvc/ with the overrides as
    configure translates them) resolves to conf/ composed with the overrides."""
    from stylisticbias.params_view import compose_view, view_overrides

    view = compose_view(view_overrides(overrides))
    assert config.full_params(view) == compose(overrides)


def test_every_experiment_resolves_from_its_view(experiments: dict[str, dict]) -> None:
    """`configure compose experiment=X && dvc repro`: the stages read what conf/ composes."""
    from stylisticbias.params_view import compose_view

    assert list(experiments) == config.available("experiment") != []
    for name, composed in experiments.items():
        view = compose_view([f"experiment={name}"])
        assert view["experiment"] == name
        assert config.full_params(view) == composed, name


def test_check_cli_detects_drift(tmp_path, monkeypatch) -> None:
    import shutil

    shutil.copytree(config.project_root() / "conf", tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    configure.write_params()
    assert configure.main(["check"]) == 0
    (tmp_path / "params.yaml").write_text(
        (tmp_path / "params.yaml").read_text().replace("n: 100", "n: 101", 1)
    )
    assert configure.main(["check"]) == 1


def test_experiments_compose(experiments: dict[str, dict], model_sections: dict[str, dict]) -> None:
    for name, params in experiments.items():
        assert params["models"], name
        for model, section in params["models"].items():
            assert section["name"] == model
            assert section["engine"]["name"] in ("simulated", "hf", "openai")
            assert model_sections[model] == section


def test_every_group_option_loads(model_sections: dict[str, dict]) -> None:
    for group in ("generator", "engine", "analysis", "tracking"):
        for name in config.available(group):
            assert isinstance(load_group_option(group, name), dict)
    # every model, composed together and alone (the first and the last: one composition each)
    assert list(model_sections) == config.available("model")
    for name, section in model_sections.items():
        assert isinstance(section, dict) and section["name"] == name
    for name in (next(iter(model_sections)), next(reversed(model_sections))):
        assert load_group_option("model", name) == model_sections[name]


def test_unknown_model_lists_valid_ones() -> None:
    try:
        load_group_option("model", "gpt-17")
    except StylisticBiasError as exc:
        msg = str(exc)
        assert "gpt-17" in msg and "simulated-strong" in msg and "\n" not in msg
    else:
        raise AssertionError("expected an error")


def test_load_models_names_an_unknown_model() -> None:
    with pytest.raises(StylisticBiasError, match=r"unknown model 'gpt-17'; valid: .*simulated"):
        config.load_models(["simulated-strong", "gpt-17"])
    assert config.load_models([]) == {}


def test_a_composition_is_reused_until_conf_or_the_environment_changes(
    tmp_path, monkeypatch
) -> None:
    import shutil

    shutil.copytree(config.project_root() / "conf", tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    first = compose()
    first["faces"]["seed"] = -1  # the caller's copy: the kept composition is not touched
    assert compose()["faces"]["seed"] == 0
    path = tmp_path / "conf" / "config.yaml"
    path.write_text(path.read_text().replace("\nseed: 0\n", "\nseed: 7\n", 1))
    assert compose()["faces"]["seed"] == 7
    ours = ["model=[tiny-llava-next-vllm]"]
    monkeypatch.setenv("STYLISTICBIAS_LOOPBACK_URL", "http://127.0.0.1:9/v1")
    assert (
        compose(ours)["models"]["tiny-llava-next-vllm"]["endpoint"]["base_url"]
        == "http://127.0.0.1:9/v1"
    )
    monkeypatch.setenv("STYLISTICBIAS_LOOPBACK_URL", "http://127.0.0.1:7/v1")
    assert (
        compose(ours)["models"]["tiny-llava-next-vllm"]["endpoint"]["base_url"]
        == "http://127.0.0.1:7/v1"
    )


def test_bad_override_is_one_line() -> None:
    try:
        compose(["generator=nonexistent"])
    except StylisticBiasError as exc:
        assert "nonexistent" in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("expected an error")


def test_get_names_missing_key() -> None:
    try:
        config.get({"judge": {"models": []}}, "judge.seeds")
    except StylisticBiasError as exc:
        assert "judge.seeds" in str(exc)
    else:
        raise AssertionError("expected an error")


def test_every_model_target_imports(model_sections: dict[str, dict]) -> None:
    """A model file's ``_target_`` names an importable engine class (a stale path after a
    rename fails here, not in the judge stage)."""
    from hydra.utils import get_class

    assert list(model_sections) == config.available("model")
    for name, section in model_sections.items():
        target = section["_target_"]
        assert isinstance(get_class(target), type), (name, target)


def test_judged_models_follow_the_model_choice() -> None:
    """One `dvc exp show` column names an experiment's judged models (-S 'model=[...]')."""
    import pytest

    from stylisticbias.validate import validate_params

    params = compose(["model=[simulated-weak,simulated-strong]"])
    want = ["simulated-weak", "simulated-strong"]
    assert params["judged_models"] == want == list(params["models"])
    assert compose(["model=[simulated-strong]"])["judged_models"] == ["simulated-strong"]
    with pytest.raises(StylisticBiasError, match=r"judged_models=\['x'\] is derived from models"):
        validate_params({**params, "judged_models": ["x"]})
