"""The task protocols' planted effects are one YAML file (``conf/planted/tasks.yaml``): the
judge, the synthetic demo and the calibration read it; a misspelt key fails in one line."""

from __future__ import annotations

import pytest
import yaml

from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.analysis import demo
from stylisticbias.families.tasks.judge.plants import PLANTED_FILE, PLANTS, load_plants, task_plant


def test_every_reader_takes_the_file() -> None:
    raw = yaml.safe_load(PLANTED_FILE.read_text(encoding="utf-8"))
    assert set(PLANTS) == set(raw["judge"])
    pw = PLANTS.lookup("pairwise", "test")
    assert dict(pw.shift) == raw["judge"]["pairwise"]["shift"]
    assert pw.position_bias == raw["judge"]["pairwise"]["position_bias"]
    assert load_plants("reflect") == demo.REFLECT_PLANT
    assert demo.VIGNETTE_PLANT["high"].shift == raw["vignette"]["high"]["shift"]


def test_null_plants_keep_only_noise_and_invalid_answers() -> None:
    for plant in load_plants("reflect", null=True).values():
        assert not plant.shift and plant.position_bias == 0.0 and plant.invalid_rate > 0


def test_a_misspelt_key_or_section_names_the_valid_ones() -> None:
    with pytest.raises(StylisticBiasError, match=r"unknown key\(s\) shfit; valid: shift, base"):
        task_plant({"shfit": {"a": 1.0}}, "tasks.yaml: judge.pairwise")
    with pytest.raises(StylisticBiasError, match="no section 'reflet'; valid: judge, reflect"):
        load_plants("reflet")
