"""Annotator and annotate specs: typed by engine, one error line naming the key and the choices."""

from __future__ import annotations

import pytest

from stylisticbias.config import compose, load_group_option
from stylisticbias.errors import StylisticBiasError
from stylisticbias.spec.annotate import OpenAIAnnotatorSpec, SimulatedAnnotatorSpec
from stylisticbias.spec.parse import annotator_spec, config_from_params


def test_the_shipped_annotators_parse() -> None:
    sim = annotator_spec(
        "simulated-annotator", load_group_option("annotator", "simulated-annotator")
    )
    assert isinstance(sim, SimulatedAnnotatorSpec) and 0 < sim.attribute_fail_rate < 1
    api = annotator_spec("openai-gpt-4o-mini", load_group_option("annotator", "openai-gpt-4o-mini"))
    assert isinstance(api, OpenAIAnnotatorSpec) and api.json_mode
    cfg = config_from_params(compose(["annotator=[simulated-annotator,openai-gpt-4o-mini]"]))
    assert list(cfg.annotators) == ["simulated-annotator", "openai-gpt-4o-mini"]
    assert cfg.qa.policy == "report" and cfg.annotate.questions == ["attribute", "identity"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"engine": "gemini"}, "annotators.x.engine='gemini'; valid: simulated, openai"),
        ({"attribute_fail_rate": 1.5}, "annotators.x.attribute_fail_rate=1.5"),
        ({"colour": 1}, "colour"),
        ({"fail_by_value": {"Blonde": 0.2}}, "must be 'Attribute=Value'"),
        ({"name": "y"}, "name='y' differs"),
    ],
)
def test_bad_annotators_fail_with_one_line(change: dict, message: str) -> None:
    data = {**load_group_option("annotator", "simulated-annotator"), "name": "x", **change}
    with pytest.raises(StylisticBiasError, match=None) as exc:
        annotator_spec("x", data)
    assert message in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("annotate.questions=[colour]", "annotate.questions='colour'; valid: attribute"),
        ("qa.policy=drop", "qa.policy='drop'; valid: report, exclude"),
        ("qa.locality.max_outside=2", "qa.locality.max_outside=2"),
    ],
)
def test_bad_sections(override: str, message: str) -> None:
    with pytest.raises(StylisticBiasError) as exc:
        config_from_params(compose([override]))
    assert message in str(exc.value)
