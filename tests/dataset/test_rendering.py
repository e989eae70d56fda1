"""The generator section below the stage edge: its spec hands the generator the section as
composed, so the render-cache keys of finished images never change with the typing."""

from __future__ import annotations

import json

import pytest

from stylisticbias.config import available, compose
from stylisticbias.dataset.rendering import BUILDER_KEYS, generator_config, generator_section
from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.parse import config_from_params


@pytest.mark.parametrize("option", available("generator"))
def test_every_shipped_generator_spec_round_trips_its_section(option: str) -> None:
    params = compose([f"generator={option}"])
    config = config_from_params(params)
    assert not isinstance(config.generator, dict), f"{option}: no spec registered"

    def canonical(d: object) -> str:  # the render cache's key encoding
        return json.dumps(d, sort_keys=True, separators=(",", ":"), default=str)

    assert canonical(generator_section(config.generator)) == canonical(params["generator"])
    cfg = generator_config(config.generator)
    assert not set(BUILDER_KEYS) & set(cfg)
    assert cfg["_target_"] == params["generator"]["_target_"]


def test_a_plug_in_generator_section_passes_through_as_given() -> None:
    section = {"_target_": "my.pkg.Gen", "workers": 3, "knob": 1.5}
    assert generator_section(section) == section
    assert generator_config(section) == {"_target_": "my.pkg.Gen", "knob": 1.5}


def test_a_section_without_target_or_a_non_section_is_one_line() -> None:
    with pytest.raises(StylisticBiasError, match=r"generator\._target_ is missing"):
        generator_config({"size": 3})
    with pytest.raises(StylisticBiasError, match="not a section"):
        generator_section(42)
