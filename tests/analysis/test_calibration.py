"""Small calibration: the analysis recovers the simulated judge's planted shifts."""

from __future__ import annotations

import json

from stylisticbias.analysis.calibration import calibrate
from stylisticbias.spec.parse import config_from_params


def test_small_calibration(default_params) -> None:
    p = json.loads(json.dumps(default_params))
    p["analysis"]["bootstrap"]["n_resamples"] = 300
    res = calibrate(config_from_params(p), n_faces=60, models=["simulated-strong"])
    assert res["n_cells"] == 40 and res["n_null_cells"] == 8
    assert res["coverage"] >= 0.9  # the full run (100+ faces) reaches >= 0.95
    assert res["null_false_positive_rate"] <= 0.125  # at most one of the 8 null cells
    assert res["max_abs_error"] < 0.05


def test_no_simulated_judge_is_not_applicable(default_params) -> None:
    res = calibrate(config_from_params(default_params), models=["tiny-llava-next"])
    assert res["coverage"] is None and "no simulated judge" in res["note"]
