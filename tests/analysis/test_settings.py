"""The analysis settings' defaults are the shipped config's values.

Function defaults across the analysis and report (``alpha``, ``strong_alpha``, ``ci``,
``large_shift``, ``pareto_share``, ``disagreement_quantile``) read :class:`AnalysisSettings`,
so they can only agree with ``conf/analysis/default.yaml`` if the dataclass does.
"""

from __future__ import annotations

import dataclasses

import yaml

from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.config import project_root


def test_dataclass_defaults_equal_conf_analysis_default() -> None:
    conf = yaml.safe_load((project_root() / "conf" / "analysis" / "default.yaml").read_text())
    shipped = AnalysisSettings.from_config(conf)
    default = AnalysisSettings()
    differ = [
        f.name
        for f in dataclasses.fields(default)
        if f.name != "group_abbrev" and getattr(shipped, f.name) != getattr(default, f.name)
    ]
    assert differ == []
    assert shipped.group_abbrev  # the Table 12 abbreviations live in the YAML only
