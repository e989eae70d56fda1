"""Compose-time checks of a configuration (unknown models, scenarios, undrawable values)."""

from __future__ import annotations

import copy

import pytest
from protocols import edited_protocol

from stylisticbias.config import compose
from stylisticbias.configure import main
from stylisticbias.errors import StylisticBiasError
from stylisticbias.validate import validate_params


@pytest.fixture(scope="module")
def params() -> dict:
    return compose()


def test_default_configuration_is_valid(params: dict) -> None:
    validate_params(copy.deepcopy(params))


def test_unknown_model_lists_the_valid_ones() -> None:
    with pytest.raises(StylisticBiasError, match=r"'model/gpt-17'.*options: .*qwen3-vl-8b"):
        compose(["model=[simulated-strong,gpt-17]"])


def test_model_name_must_be_a_params_path(params: dict) -> None:
    p = copy.deepcopy(params)
    p["models"]["llava-v1.6"] = {**p["models"]["simulated-strong"], "name": "llava-v1.6"}
    with pytest.raises(StylisticBiasError, match=r"models.llava-v1.6: a model name may hold"):
        validate_params(p)


def test_unknown_scenario(params: dict) -> None:
    p = copy.deepcopy(params)
    p["judge"]["scenarios"] = [1, 99]
    with pytest.raises(StylisticBiasError, match=r"judge.scenarios: unknown scenario_id 99"):
        validate_params(p)


def test_value_the_procedural_generator_cannot_draw(params: dict, tmp_path) -> None:
    p = copy.deepcopy(params)

    def frecklez(cfg: dict) -> None:
        skin = next(a for a in cfg["attributes"] if a["key"] == "skin_irregularities")
        skin["values"][0]["value"] = "Frecklez"

    p["protocol"] = edited_protocol(tmp_path, frecklez)
    p["paths"]["reports"] = "reports/stylisticbias-edited"  # the edited protocol's own
    with pytest.raises(
        StylisticBiasError, match=r"cannot render, e.g. .*Frecklez.*valid: Freckles"
    ):
        validate_params(p)
    # a prompt-driven backend accepts any value
    p["generator"] = compose(["generator=gemini"])["generator"]
    validate_params(p)


def test_compose_cli_refuses_and_leaves_params_alone(tmp_path, monkeypatch) -> None:
    from stylisticbias import config

    target = tmp_path / "params.yaml"
    target.write_text("sentinel\n")
    monkeypatch.setattr(config, "project_root", lambda: tmp_path)
    monkeypatch.setattr(config, "conf_dir", lambda: config.ROOT / "conf")
    assert main(["compose", "model=[gpt-17]"]) == 2
    assert target.read_text() == "sentinel\n"


def test_a_documented_added_key_composes_and_a_misspelt_endpoint_key_fails_at_compose() -> None:
    """``+models.M.endpoint.batch=true`` (docs/engines.md) composes into the view and checks;
    ``endpoint.batchx`` is refused at compose time in one line, not when the judge starts."""
    from stylisticbias.config import full_params
    from stylisticbias.params_view import compose_view, view_overrides

    base = ["model=[openai-gpt-4o-mini]", "protocols=[stylisticbias]"]
    view = compose_view(view_overrides([*base, "+models.openai-gpt-4o-mini.endpoint.batch=true"]))
    assert view["models"]["openai-gpt-4o-mini"]["endpoint"]["batch"] is True
    validate_params(full_params(view))
    bad = compose_view(view_overrides([*base, "+models.openai-gpt-4o-mini.endpoint.batchx=1"]))
    with pytest.raises(StylisticBiasError, match=r"unknown endpoint key\(s\) \['batchx'\]") as exc:
        validate_params(full_params(bad))
    assert "\n" not in str(exc.value)
