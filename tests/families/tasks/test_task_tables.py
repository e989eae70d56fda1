"""Task-protocol tables: every table has a registered schema, the builders' output passes it,
the planted effects show in the simulated demo's tables, and a bad value fails in one line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.analysis import tables as tt
from stylisticbias.families.tasks.analysis.calibration import calibrate_reflect, calibrate_vignette
from stylisticbias.families.tasks.analysis.calibration import main as cal_main
from stylisticbias.families.tasks.analysis.demo import main, reflect_demo, vignette_demo


@pytest.fixture(scope="module")
def reflect():
    return reflect_demo(n_boot=200)


@pytest.fixture(scope="module")
def vignette():
    return vignette_demo(n_boot=200)


def test_every_task_table_has_a_schema_of_vocabulary_words() -> None:
    for t in tt.TASK_TABLES:
        assert set(t.columns) <= set(tt._WORDS), t.name
        assert t.columns[-1] == "simulated" and set(t.keys) <= set(t.columns)
        assert tt.task_schema(t.name).name == t.name
    with pytest.raises(StylisticBiasError, match="unknown task table 'nope'; valid: "):
        tt.task_schema("nope")


def test_reflect_demo_tables_show_the_planted_effects(reflect) -> None:
    assert set(reflect) == {
        "reflect_win_rates",
        "reflect_win_matrix",
        "task_position_bias",
        "reflect_mcq_distribution",
        "reflect_mcq_gaps",
        "reflect_salary_gaps",
        "reflect_salary_tests",
    }
    for name, df in reflect.items():
        tt.validate_task_table(name, df)
        assert len(df) and df["simulated"].all()
    # the matrix: M[r, c] + M[c, r] = 1 on every cell pair, the planted order shows
    m = reflect["reflect_win_matrix"].set_index(["group", "opponent"])["win_rate"]
    for (g, o), v in m.items():
        assert v + m[(o, g)] == pytest.approx(1.0)
    assert m[("white-male", "black-female")] > 0.5
    wr = reflect["reflect_win_rates"].set_index("group")["win_rate"]
    assert wr["white-male"] > wr["white-female"] > wr["black-female"]  # planted strengths
    pb = reflect["task_position_bias"].iloc[0]
    assert pb["position_bias"] > 0 and pb["ci_low"] > 0  # planted +0.3 toward slot 1
    dist = reflect["reflect_mcq_distribution"]
    pooled = dist[dist["group"] == "pooled"]
    assert pooled["share"].sum() == pytest.approx(1.0) and len(pooled) == 6
    tests = reflect["reflect_salary_tests"].iloc[0]
    assert tests["pval"] < 0.05  # planted salary gaps


def test_vignette_demo_tables(vignette) -> None:
    for name, df in vignette.items():
        tt.validate_task_table(name, df)
    sel = vignette["vignette_selection"].set_index("identity")["selection_frequency"]
    assert sel.mean() == pytest.approx(50, abs=1.5)  # a balanced two-way choice
    pol = vignette["vignette_polarity"].set_index("identity")["polarity"]
    assert pol["doctor"] > 0 > pol["athlete"]  # planted: doctor friendly, athlete unfriendly
    lo = vignette["vignette_log_odds"]
    assert set(lo["activity"]) == {"friendly", "unfriendly"}
    assert vignette["vignette_pair_comp"]["pair_comp"].between(-1, 1).all()
    tvi = vignette["vignette_text_vs_image"].set_index("identity")
    # planted with the image only: doctor chosen more with it than without, and significantly
    assert tvi.loc["doctor", "delta"] > 0.05 and tvi.loc["doctor", "pval"] < 0.05
    assert tvi["share_text"].between(0.35, 0.65).all()  # no preference planted without it


def test_a_bad_value_fails_in_one_line(reflect) -> None:
    df = reflect["reflect_win_rates"].copy()
    df.loc[0, "win_rate"] = 1.5
    with pytest.raises(StylisticBiasError) as err:
        tt.validate_task_table("reflect_win_rates", df)
    assert "\n" not in str(err.value) and "win_rate" in str(err.value)
    with pytest.raises(StylisticBiasError):
        tt.validate_task_table("reflect_win_rates", df.drop(columns=["n"]))


def test_demo_cli_writes_every_table(tmp_path) -> None:
    assert main(["--protocol", "vignette", "--out", str(tmp_path)]) == 0
    written = {p.stem for p in tmp_path.glob("*.csv")}
    assert written == {
        "vignette_selection",
        "vignette_log_odds",
        "vignette_pair_comp",
        "vignette_polarity",
        "task_position_bias",
        "vignette_text_vs_image",
    }
    back = pd.read_csv(tmp_path / "task_position_bias.csv")
    tt.validate_task_table("task_position_bias", back)


# slow tier: calibration replicates of every table (~5 CPU-s); fast sibling:
# test_calibration_truths_match_monte_carlo
@pytest.mark.slow
def test_calibration_runs_every_table_and_merges_into_the_bench_file(tmp_path) -> None:
    res = calibrate_reflect(2, n_photos=24, n_boot=100, null_replicates=3)
    assert set(res["coverage"]) == {
        "reflect_win_rates",
        "task_position_bias",
        "reflect_mcq_gaps",
        "reflect_salary_gaps",
    }
    for c in res["coverage"].values():
        assert 0 <= c["coverage"] <= 1 and c["ci95"][0] <= c["coverage"] <= c["ci95"][1]
        assert c["replicates"] == 2 and abs(c["bias"]) <= c["rmse"]
    assert set(res["null_fdr"]) == {"reflect_salary_tests", "task_position_bias"}
    assert all(f["replicates"] == 3 for f in res["null_fdr"].values())
    res = calibrate_vignette(2, n_inst=20, n_boot=100, null_replicates=2)
    assert set(res["coverage"]) == {"vignette_selection", "vignette_log_odds", "task_position_bias"}
    assert set(res["null_fdr"]) == {
        "vignette_log_odds",
        "vignette_pair_comp",
        "vignette_polarity",
        "vignette_text_vs_image",
        "task_position_bias",
    }
    assert set(res["power"]) == set(res["null_fdr"])
    assert all(0 <= p["row_rejection_share"] <= 1 for p in res["power"].values())
    assert calibrate_vignette(2, n_inst=20, n_boot=100, null_replicates=2, jobs=2) == res
    out = tmp_path / "calibration.json"
    out.write_text(json.dumps({"plants": {"x": 1}, "protocols": {"beauty": {"y": 2}}}))
    assert (
        cal_main(
            [
                "--protocol",
                "vignette",
                "--replicates",
                "2",
                "--null-replicates",
                "2",
                "--bootstrap",
                "50",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert doc["plants"] == {"x": 1} and doc["protocols"]["beauty"] == {"y": 2}
    assert len(doc["protocols"]["vignette"]["load_average"]["start"]) == 3
    assert doc["protocols"]["vignette"]["command"].startswith(
        "python -m stylisticbias.families.tasks.analysis.calibration --protocol vignette"
    )


def test_calibration_truths_match_monte_carlo() -> None:
    """The closed-form truths equal the simulated judge's long-run behaviour."""
    from stylisticbias.families.tasks.analysis import calibration as tc
    from stylisticbias.judge.engines.simulated.tasks import TaskPlant

    plant = TaskPlant(shift={"a": 0.7, "c": -0.4}, position_bias=0.3)
    rng = np.random.default_rng(0)
    n = 200_000
    wins, seen, slot1, answers = {g: 0 for g in "abc"}, {g: 0 for g in "abc"}, 0, 0
    for f, s in [("a", "b"), ("a", "c"), ("b", "c")]:
        p0, p1 = tc._pair_probs(plant, f, s)
        c0, c1 = rng.random(n) < p0, rng.random(n) < p1  # True: f chosen
        slot1 += int(c0.sum() + (~c1).sum())
        answers += 2 * n
        keep = c0 == c1
        wins[f] += int((keep & c0).sum())
        wins[s] += int((keep & ~c0).sum())
        for g in (f, s):
            seen[g] += int(keep.sum())
    truth = tc.win_rate_truth(plant, "abc", 0.0)
    for g in "abc":
        assert wins[g] / seen[g] == pytest.approx(truth[g], abs=0.004)
    assert slot1 / answers - 0.5 == pytest.approx(tc.position_bias_truth(plant, "abc"), abs=0.003)
    sel = tc.selection_truth([plant], "abc")
    assert sel["a"] > 50 > sel["c"] and sum(sel.values()) == pytest.approx(150)
