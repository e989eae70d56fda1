"""``families/_template/``: a family to copy. It stays a valid :class:`Family` (every stage a
hook or a lack) as the seam evolves, its hooks resolve, and no protocol can name it."""

from __future__ import annotations

import pandas as pd

from stylisticbias.families._template import FAMILY
from stylisticbias.families._template.stage import phi_by_scenario
from stylisticbias.family import FAMILY_NAMES, HOOKS, Family


def test_the_template_declares_every_stage_once() -> None:
    assert isinstance(FAMILY, Family) and FAMILY.name == "_template"
    assert set(FAMILY.hooks) | set(FAMILY.lacks) == set(HOOKS)
    for stage in FAMILY.hooks:
        assert callable(FAMILY.hook(stage)), stage
    assert "_template" not in FAMILY_NAMES  # copied, never a protocol's family


def test_the_template_statistic() -> None:
    scores = pd.DataFrame({"scenario_id": [1, 1, 2], "phi": [0.25, 0.75, 1.0]})
    out = phi_by_scenario(scores, "m")
    assert out.to_dict("list") == {"model": ["m", "m"], "scenario_id": [1, 2], "phi": [0.5, 1.0]}
