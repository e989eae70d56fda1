"""Invalidation follows the families (stylisticbias.stage_inputs): a stage group hashes the
shared code it runs plus its protocol's family only, so an edit inside one family (REFLECT's
MCQ gap, in the tasks family) changes no group file of another family's protocol."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from stylisticbias.config import ROOT
from stylisticbias.family import FAMILY_NAMES
from stylisticbias.stage_inputs import GROUPS, group_file, group_inputs

#: a statistic of REFLECT's MCQ gap, inside the tasks family
MCQ_GAP = "src/stylisticbias/families/tasks/analysis/stats.py"
FAMILY_OF = {
    "stylisticbias": "variation_shift",
    "beauty-and-the-bias": "paired_variation",
    "reflect": "tasks",
    "vignette": "tasks",
}


def _files(protocol: str, root: Path) -> dict[str, str]:
    """Every group file's text for ``protocol`` (one judged model)."""
    params = {"protocol": protocol, "models": {"m": {}}}
    return {g.name: group_file(g, params, root, "m" if g.per_model else "") for g in GROUPS}


@pytest.mark.parametrize("protocol", sorted(FAMILY_OF))
def test_a_group_hashes_no_other_familys_code(protocol: str) -> None:
    family = FAMILY_OF[protocol]
    for group in GROUPS:
        inputs = group_inputs(group, ROOT, protocol)
        for other in FAMILY_NAMES:
            mine = [i for i in inputs if i.startswith(f"src/stylisticbias/families/{other}/")]
            if other != family:
                assert mine == [], (protocol, group.name, mine)
            else:  # the family's declaration (read by the protocol's parser) is every group's
                assert f"src/stylisticbias/families/{family}/__init__.py" in mine


def test_the_task_groups_hash_the_mcq_gap() -> None:
    analysis = next(g for g in GROUPS if g.name == "analysis")
    for protocol in ("reflect", "vignette"):
        assert MCQ_GAP in group_inputs(analysis, ROOT, protocol)


def test_editing_reflects_mcq_gap_changes_no_other_familys_group(tmp_path: Path) -> None:
    for part in ("src", "pipelines", "conf"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    protocols = ("stylisticbias", "beauty-and-the-bias", "reflect")
    before = {p: _files(p, tmp_path) for p in protocols}
    with (tmp_path / MCQ_GAP).open("a", encoding="utf-8") as f:
        f.write("\n# an edited statistic of the MCQ gap\n")
    after = {p: _files(p, tmp_path) for p in protocols}
    for p in ("stylisticbias", "beauty-and-the-bias"):
        assert after[p] == before[p], p  # `dvc status`: no stage of theirs changed
    changed = {g for g in before["reflect"] if after["reflect"][g] != before["reflect"][g]}
    assert "analysis" in changed and "dataset" not in changed
    inputs = yaml.safe_load(after["reflect"]["analysis"])["inputs"]
    assert inputs[MCQ_GAP] != yaml.safe_load(before["reflect"]["analysis"])["inputs"][MCQ_GAP]
