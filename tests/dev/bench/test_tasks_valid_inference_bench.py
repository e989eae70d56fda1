"""The task protocols' valid-inference bench: each design set runs end to end (tiny counts)
and lands under its own key, every other key kept."""

from __future__ import annotations

import json
from pathlib import Path

from stylisticbias.families.tasks.analysis.designs import DESIGN_SETS
from stylisticbias_dev.bench import tasks_valid_inference as bench


def test_each_design_set_writes_its_own_key(tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    out.write_text('{"protocols": {"reflect": {"coverage": 1}}, "other": 2}')
    small = ["--reflect-null", "1", "--reflect-planted", "1", "--vignette-null", "1"]
    small += ["--vignette-planted", "1", "--bootstrap", "19", "--out", str(out)]
    assert bench.main([*small, "--designs", "few-clusters"]) == 0
    doc = json.loads(out.read_text())
    assert doc["other"] == 2 and doc["protocols"]["reflect"]["coverage"] == 1
    few = doc["protocols"]["reflect"]["valid_inference_few_clusters"]
    assert few["design_set"] == "few-clusters" and few["design"]["salary"]["photos"] == 20
    vig = doc["protocols"]["vignette"]["valid_inference_few_clusters"]
    assert vig["design"]["instances"] == DESIGN_SETS["few-clusters"]["vignette"]["design"].instances
    assert "--designs few-clusters" in few["command"]
    assert "valid_inference" not in doc["protocols"]["reflect"]  # the default set's key
