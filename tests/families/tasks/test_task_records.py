"""Task tables, task scores and the task calibration from the simulated judge's records."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.families.tasks.analysis.records import (
    task_fit,
    task_markdown,
    task_tables_from_records,
)
from stylisticbias.families.tasks.judge.run import task_records
from stylisticbias.families.tasks.scores import task_scores


def faces(n: int) -> pd.DataFrame:
    eth = ["White", "Black", "Asian", "Latino", "Middle Eastern"]
    return pd.DataFrame(
        {
            "face_id": [f"F{i:04d}" for i in range(n)],
            "image_id": [f"F{i:04d}-base" for i in range(n)],
            "ethnicity": [eth[i % 5] for i in range(n)],
            "gender": ["female" if (i // 5) % 2 == 0 else "male" for i in range(n)],
            "status": ["ok"] * n,
        }
    )


@pytest.fixture(scope="module")
def reflect_records() -> pd.DataFrame:
    return task_records(load_benchmark("reflect"), faces(600), "sim", seed=2)


def test_reflect_tables_from_records(reflect_records):
    bench = load_benchmark("reflect")
    tabs = task_tables_from_records(reflect_records, bench, "sim", n_boot=20, simulated=True)
    assert set(tabs) == {
        "reflect_win_rates",
        "reflect_win_matrix",
        "task_position_bias",
        "reflect_mcq_distribution",
        "reflect_mcq_gaps",
        "reflect_salary_gaps",
        "reflect_salary_tests",
    }
    # one position-bias row per pairwise task; the planted bias toward slot 1 shows
    pb = tabs["task_position_bias"]
    assert sorted(pb["scenario_id"]) == [1, 2, 3]
    assert (pb["position_bias"] > 0).all()
    # planted: white-male wins more often than black-female
    wr = tabs["reflect_win_rates"]
    wr = wr[wr["scenario_id"] == 1].set_index("group")
    assert (
        wr.filter(like="win").iloc[:, 0]["white-male"]
        > wr.filter(like="win").iloc[:, 0]["black-female"]
    )
    md = task_markdown(tabs, bench)
    assert md.startswith("## Task protocol: reflect") and "### reflect_salary_gaps" in md


def test_task_scores_and_fit(reflect_records):
    sc = task_scores(reflect_records)
    # counts add up to the records; expected masses to the records with a distribution
    assert sc.groupby("task_id")["count"].sum().to_dict() == (
        reflect_records.groupby("task_id").size().to_dict()
    )
    with_dist = reflect_records[reflect_records["dist"] != ""]
    assert sc["mass"].sum() == pytest.approx(len(with_dist))
    fit = task_fit(sc, alpha=0.001)
    assert fit["n_tasks_tested"] == 5 and fit["n_tasks_free_number"] == 6
    assert fit["n_rejected"] == 0
    # answers that ignore their distributions are rejected
    wrong = sc.copy()
    first = wrong["outcome"] == "first"
    wrong.loc[first, "count"] = wrong.loc[first, "count"] * 2
    assert task_fit(wrong, alpha=0.001)["n_rejected"] >= 3


@pytest.mark.slow  # 80 faces of VIGNETTE records: ~20 s (REFLECT from records above and the
# VIGNETTE tables in tests/families/tasks/test_task_tables.py stay in make test)
def test_vignette_tables_from_records():
    full = load_benchmark("vignette")
    ids = [*range(101, 161), *range(3021, 3030), *range(4021, 4030)]  # stereotypes, cooking
    bench = dataclasses.replace(full, tasks=tuple(full.task_scenario(i) for i in ids))
    rec = task_records(bench, faces(80), "sim", seed=1)
    tabs = task_tables_from_records(rec, bench, "sim", n_boot=10, simulated=True)
    assert {
        "vignette_selection",
        "vignette_log_odds",
        "vignette_pair_comp",
        "vignette_polarity",
        "vignette_text_vs_image",
        "task_position_bias",
    } <= set(tabs)
    assert "reflect_win_rates" not in tabs
    # every text-only question is compared with the image question it mirrors (3021-3029)
    assert sorted(tabs["vignette_text_vs_image"]["scenario_id"].unique()) == list(range(3021, 3030))


def test_counterfactual_records_cluster_on_the_source_photo():
    """With counterfactual sets every record's unit is its source photo: the salary OLS is
    statsmodels' with errors clustered on the sources, and the win-rate interval resamples
    sources (not edits or pairs)."""
    import numpy as np
    import statsmodels.formula.api as smf

    from stylisticbias.families.tasks.analysis import stats as ts

    n_src, groups = 30, 10
    f = faces(n_src * groups)  # ten consecutive faces: the ten groups of one source
    sets = pd.DataFrame(
        {
            "image_id": f["image_id"],
            "face_id": f["face_id"],
            "source_id": [f"S{i // groups:02d}" for i in range(len(f))],
        }
    )
    bench = load_benchmark("reflect")
    rec = task_records(bench, f, "sim", seed=4, sets=sets)
    assert set(rec["unit"]) == set(sets["source_id"])
    tabs = task_tables_from_records(rec, bench, "sim", n_boot=200, seed=0, simulated=True)
    # salary: cluster-robust OLS, clusters = source photos
    sal = rec[(rec["task_id"] == 21) & rec["value"].notna()]
    df = pd.DataFrame({"value": sal["value"], "group": sal["first"], "unit": sal["unit"]})
    ref = "white-female"
    fit = smf.ols(f"value ~ C(group, Treatment('{ref}'))", data=df).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(df["unit"])[0]}
    )
    names = [n for n in fit.params.index if n != "Intercept"]
    want = fit.wald_test(np.eye(len(fit.params))[1:], use_f=True, scalar=True)
    got = tabs["reflect_salary_tests"].query("scenario_id == 21 and effect == 'group'").iloc[0]
    assert len(names) == 9 and got["f_stat"] == pytest.approx(float(want.statistic), rel=1e-9)
    assert got["test"].startswith("wild cluster bootstrap")  # the default: a bootstrap p
    paper = task_tables_from_records(
        rec, bench, "sim", n_boot=200, seed=0, simulated=True, paper_tests=True
    )["reflect_salary_tests"]
    got = paper.query("scenario_id == 21").iloc[0]
    assert got["pval"] == pytest.approx(float(want.pvalue), rel=1e-9)
    assert got["test"] == "paper: cluster-robust Wald F" and set(paper["effect"]) == {"group"}
    # win rate: the interval of the per-source (wins, appearances) totals
    pairs = ts.consolidate_pairs(
        rec[rec["task_id"] == 1].rename(columns={"outcome": "choice"})[
            ["unit", "first", "second", "variant", "choice"]
        ]
    )
    kept = pairs[pairs["status"] == "consistent"]
    g = "white-male"
    appears = (kept["first"] == g) | (kept["second"] == g)
    per = (
        pd.DataFrame({"unit": kept["unit"], "w": appears & (kept["winner"] == g), "a": appears})
        .groupby("unit")[["w", "a"]]
        .sum()
        .reindex(sorted(set(rec["unit"])), fill_value=0)
        .to_numpy(float)
    )
    assert per.shape[0] == n_src
    lo, hi = ts.unit_bootstrap_ci(per, lambda s: s[0] / s[1], 200, 0)
    row = tabs["reflect_win_rates"].query("scenario_id == 1 and group == @g").iloc[0]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), rel=1e-12)
