"""Task-protocol tables: every table has a registered schema, the builders' output passes it,
the planted effects show in the simulated demo's tables, and a bad value fails in one line."""

from __future__ import annotations

import pandas as pd
import pytest

from stylisticbias.analysis import task_tables as tt
from stylisticbias.analysis.task_calibration import calibrate_reflect, calibrate_vignette
from stylisticbias.analysis.task_demo import main, reflect_demo, vignette_demo
from stylisticbias.errors import StylisticBiasError


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
    with pytest.raises(StylisticBiasError, match="task table 'nope' is not registered; valid: "):
        tt.task_schema("nope")


def test_reflect_demo_tables_show_the_planted_effects(reflect) -> None:
    assert set(reflect) == {
        "reflect_win_rates",
        "position_bias",
        "reflect_mcq_distribution",
        "reflect_mcq_gaps",
        "reflect_salary_gaps",
        "reflect_salary_tests",
    }
    for name, df in reflect.items():
        tt.validate_task_table(name, df)
        assert len(df) and df["simulated"].all()
    wr = reflect["reflect_win_rates"].set_index("group")["win_rate"]
    assert wr["white-male"] > wr["white-female"] > wr["black-female"]  # planted strengths
    pb = reflect["position_bias"].iloc[0]
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
    assert written == {"vignette_selection", "vignette_log_odds", "vignette_pair_comp",
                       "vignette_polarity", "position_bias", "vignette_text_vs_image"}  # fmt: skip
    back = pd.read_csv(tmp_path / "position_bias.csv")
    tt.validate_task_table("position_bias", back)


def test_calibration_runs_and_reports_coverage_with_intervals() -> None:
    res = calibrate_reflect(2, n_photos=24, n_boot=100)
    assert set(res["coverage"]) == {"win_rate", "mcq_relative_mean_gap", "salary_gap_pct"}
    for c in res["coverage"].values():
        assert 0 <= c["coverage"] <= 1 and c["ci95"][0] <= c["coverage"] <= c["ci95"][1]
    assert set(res["null_rejection"]) == {"salary_group_F", "mcq_chi2"}
    res = calibrate_vignette(2, n_inst=20, n_boot=100)
    assert set(res["coverage"]) == {"selection_frequency", "position_bias"}
