"""The paired-variation calibration recovers the planted halo of the simulated judge."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stylisticbias.benchmark import DEMOGRAPHIC_AXES, benchmark_from_params
from stylisticbias.config import compose
from stylisticbias.families.paired_variation.analysis import calibration as pc
from stylisticbias.families.paired_variation.analysis.counts import Bootstrap
from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine, image_attrs
from stylisticbias.judge.engines.simulated.ground_truth import planted_truth
from stylisticbias.judge.engines.simulated.planted import planted_source
from stylisticbias.sampling import sample_identities
from stylisticbias.scores import compute_scores


@pytest.fixture(scope="module")
def run() -> tuple:
    params = compose(["experiment=beauty-demo"])
    bench = benchmark_from_params(params)
    v = bench.variations[0]
    ids = sample_identities(bench, 72, seed=5, sampler="uniform")
    faces = ids[["face_id", *DEMOGRAPHIC_AXES]].assign(image_id=ids["face_id"] + "--base")
    var = faces.assign(
        image_id=faces["face_id"] + "--b",
        category=v.category,
        attribute=v.attribute,
        value=v.value,
    )
    cfg = dict(params["models"]["simulated-halo-strong"])
    img = image_attrs(faces, var)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].astype(object)
    attrs = attrs.where(attrs.notna(), None).to_dict("records")
    eng = SimulatedJudgeEngine(cfg, cfg["engine"], params["judge"], bench)
    j = eng.judge_records(img["image_id"].tolist(), img["face_id"].tolist(), attrs)
    scores = compute_scores(j, faces, var, bench)
    planted = planted_source(cfg, cfg["engine"])
    truth = planted_truth(bench, faces, var, cfg, planted=planted)
    return bench, scores, truth


def test_true_effects_mark_the_planted_nulls(run) -> None:
    bench, _, truth = run
    eff = pc.true_effects(truth, bench)
    assert sorted(eff.loc[eff["null"], "scenario_id"]) == [73, 74, 75, 76, 77, 78, 79, 80, 90, 91]
    halo = eff[eff["scenario_id"].isin([s.id for s in bench.scenarios if "halo" in s.tags])]
    assert (halo["shift_true"] > 0.1).all()  # the planted halo: ~0.8 logit on the traits
    # the truth is the mean over the images of the exact expected phi
    t47 = truth[truth["scenario_id"] == 47]
    want = (
        t47.loc[~t47["is_base"].astype(bool), "phi_true"].mean()
        - t47.loc[t47["is_base"].astype(bool), "phi_true"].mean()
    )
    assert eff.set_index("scenario_id").loc[47, "shift_true"] == pytest.approx(want)
    # female faces lean away from the stereotyped job: a negative gap (female - male) on jobs
    jobs = eff[eff["scenario_id"] <= 39]
    assert (jobs["gap_true"] < -0.05).all()


def test_calibration_recovers_the_halo_and_keeps_nulls_quiet(run) -> None:
    bench, scores, truth = run
    cells = pc.calibrate_scores(
        scores, pc.true_effects(truth, bench), bench, Bootstrap(400, 0.95, 0)
    )
    summary = pc.summarise(cells)
    assert summary["halo"]["n_cells"] == 33
    assert summary["halo"]["coverage"] >= 0.8  # one replicate: the bench averages many
    assert abs(summary["halo"]["bias"]) < 0.03
    assert summary["halo"]["halo_rate"] > 0.9
    assert summary["variation_shift_all_scenarios"]["n_null_cells"] == 10
    assert summary["variation_shift_all_scenarios"]["false_positive_rate_null"] <= 0.2
    assert summary["gender_gap"]["coverage"] >= 0.8
    # a wrong truth is caught: shift every truth by 0.2 and coverage collapses
    wrong = pc.true_effects(truth, bench).assign(shift_true=lambda d: d["shift_true"] + 0.2)
    bad = pc.summarise(pc.calibrate_scores(scores, wrong, bench, Bootstrap(400, 0.95, 0)))
    assert bad["halo"]["coverage"] < 0.2


def test_report_of_several_models() -> None:
    cells = pd.DataFrame(
        {
            "halo": [True, True, False],
            "null": [False, False, True],
            "shift": [0.2, 0.1, 0.0],
            "shift_true": [0.2, 0.3, 0.0],
            "covered": [True, False, True],
            "significant_alpha": [True, True, False],
        }
    )
    rep = pc.calibration_report({"a": cells, "b": cells}, {"faces": 3})
    assert rep["halo"]["coverage"] == 0.5 and rep["halo"]["n_cells"] == 4
    assert rep["models"]["a"]["halo"]["bias"] == pytest.approx(-0.1)
    assert rep["halo"]["rmse"] == pytest.approx(np.sqrt(0.02))
    assert rep["simulated"] is True and rep["settings"] == {"faces": 3}
