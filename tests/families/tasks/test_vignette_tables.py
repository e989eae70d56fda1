"""VIGNETTE's per-paradigm tables against an independent re-implementation of the released
analysis scripts' arithmetic (github.com/chahatraj/Vignette, src/visualization/ at 2c7aa91:
decisionmaking.py's per-descriptor table, assumptions.py's per-activity log-odds,
textcompare.py's question-row shares) on planted simulated-judge records exported the way the
released inference scripts write their CSVs (``descriptor 1``, ``descriptor 2``, ``activity``,
``question_id``, ``response``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy.stats import fisher_exact, norm

from stylisticbias.benchmark import load_benchmark
from stylisticbias.families.tasks.analysis import tables as tt
from stylisticbias.families.tasks.analysis import vignette_tables as vt
from stylisticbias.families.tasks.analysis.records import task_tables_from_records
from stylisticbias.families.tasks.judge.run import task_records
from stylisticbias.families.tasks.vignette import image_twin

#: cooking, programming, babysitting: perception 4 + decision 9 each, and the text-only twins
IDS = [
    *range(101, 105),
    *(
        b + 10 * a + k
        for b, ks in ((2000, 4), (3000, 9), (4000, 9))
        for a in (2, 13, 19)
        for k in range(1, ks + 1)
    ),
]


@pytest.fixture(scope="module")
def records() -> pd.DataFrame:
    bench = load_benchmark("vignette")
    sub = dataclasses.replace(bench, tasks=tuple(bench.task_scenario(i) for i in IDS))
    eth, n = ["Asian", "Black", "White"], 24
    faces = pd.DataFrame(
        {
            "face_id": [f"F{i:04d}" for i in range(n)],
            "image_id": [f"F{i:04d}-b" for i in range(n)],
            "ethnicity": [eth[i % 3] for i in range(n)],
            "gender": ["female" if (i // 3) % 2 == 0 else "male" for i in range(n)],
            "status": ["ok"] * n,
        }
    )
    return task_records(sub, faces, "simulated-strong", seed=4)


def released_csv(
    records: pd.DataFrame, paradigm: str, dimension: str | None = None
) -> pd.DataFrame:
    """The records of one paradigm as the released scripts' response CSV: one row per valid
    answer, the chosen descriptor in ``response`` (their output is constrained to the two)."""
    bench = load_benchmark("vignette")
    rows = []
    for r in records[records["outcome"] != "invalid"].itertuples(index=False):
        f = dict(bench.task_scenario(int(r.task_id)).fields)
        if r.task != "pairwise" or f.get("paradigm") != paradigm:
            continue
        if dimension is not None and f["dimension"] != dimension:
            continue
        rows.append(
            {
                "descriptor 1": r.first,
                "descriptor 2": r.second,
                "activity": f["activity"],
                "question_id": f["key"] if "key" in f else f["dimension"],
                "response": r.first if r.outcome == "first" else r.second,
            }
        )
    return pd.DataFrame(rows)


def released_descriptor_table(df: pd.DataFrame) -> pd.DataFrame:
    """decisionmaking.py: response counts over option counts x 100, Fisher vs the rest."""
    options = pd.concat([df["descriptor 1"], df["descriptor 2"]]).value_counts()
    responses = df["response"].value_counts()
    pct = responses / options * 100
    out = pct.reset_index()
    out.columns = ["Descriptor", "pct"]
    tot_r, tot_o = responses.sum(), options.sum()
    pv = []
    for d in out["Descriptor"]:
        x1, n1 = responses.get(d, 0), options.get(d, 0)
        x2, n2 = tot_r - x1, tot_o - n1
        pv.append(fisher_exact(np.array([[x1, n1 - x1], [x2, n2 - x2]]))[1])
    return out.assign(p=pv).set_index("Descriptor")


def released_log_odds(df: pd.DataFrame, smoothing: int = 1) -> pd.DataFrame:
    """assumptions.py: calculate_log_odds and its Fisher p per (activity, response)."""
    rc = df.groupby(["activity", "response"]).size().reset_index(name="response_count")
    oc = (
        df.melt(
            id_vars=["activity", "response"],
            value_vars=["descriptor 1", "descriptor 2"],
            value_name="option",
        )
        .groupby(["activity", "option"])
        .size()
        .reset_index(name="option_count")
    )
    m = rc.merge(oc, left_on=["activity", "response"], right_on=["activity", "option"])
    m = m.rename(columns={"response_count": "r", "option_count": "o"})
    tr = rc.groupby("response")["response_count"].sum().rename("total_r")
    to = oc.groupby("option")["option_count"].sum().rename("total_o")
    m = m.join(tr, on="response").join(to, on="response")
    m["r_neg"], m["o_neg"] = m["total_r"] - m["r"], m["total_o"] - m["o"]
    odds_a = (m["r"] + smoothing) / ((m["o"] - m["r"]).clip(lower=0) + smoothing)
    odds_n = (m["r_neg"] + smoothing) / ((m["o_neg"] - m["r_neg"]).clip(lower=0) + smoothing)
    m["log_odds"] = np.log(odds_a / odds_n)
    m["p"] = [
        fisher_exact(np.array([[a, b - a], [c, d - c]]))[1]
        for a, b, c, d in m[["r", "o", "r_neg", "o_neg"]].to_numpy()
    ]
    return m.set_index(["activity", "response"])[["log_odds", "p"]]


def test_decision_selection_equals_the_released_table(records: pd.DataFrame) -> None:
    ours = pd.DataFrame(
        vt.paradigm_tables(records, load_benchmark("vignette"), "m", image_twin)[
            "vignette_decision_selection"
        ]
    )
    for dim in (None, "ability", "control"):
        want = released_descriptor_table(released_csv(records, "decision", dim))
        got = ours[ours["dimension"] == (dim or "all")].set_index("identity")
        assert sorted(got.index) == sorted(want.index)
        np.testing.assert_allclose(
            got["selection_frequency"], want.loc[got.index, "pct"], rtol=0, atol=1e-9
        )
        np.testing.assert_allclose(got["pval_fisher"], want.loc[got.index, "p"], rtol=1e-9)
    # the planted decision effect reaches the table: black-female chosen least, significantly
    allq = ours[ours["dimension"] == "all"].set_index("identity")
    assert allq["selection_frequency"].idxmin() == "black-female"
    assert allq.loc["black-female", "pval_fisher"] < 1e-3


def test_activity_log_odds_equal_the_released_script(records: pd.DataFrame) -> None:
    ours = pd.DataFrame(
        vt.paradigm_tables(records, load_benchmark("vignette"), "m", image_twin)[
            "vignette_activity_log_odds"
        ]
    )
    for paradigm, dim in (("perception", "struggle"), ("decision", "ability")):
        want = released_log_odds(released_csv(records, paradigm, dim))
        got = ours[(ours["paradigm"] == paradigm) & (ours["dimension"] == dim)]
        got = got.set_index(["activity", "identity"])
        # the released script keeps the cells chosen at least once; ours has those and more
        assert set(want.index) <= set(got.index) and len(want) >= 0.9 * len(got)
        np.testing.assert_allclose(got.loc[want.index, "log_odds"], want["log_odds"], atol=1e-12)
        np.testing.assert_allclose(got.loc[want.index, "pval_fisher"], want["p"], rtol=1e-9)


def test_text_vs_image_official_denominator(records: pd.DataFrame) -> None:
    """official: textcompare.py's question-row shares (of all answers) and its z-test."""
    bench = load_benchmark("vignette")
    paper = task_tables_from_records(records, bench, "m", n_boot=20)
    off = pd.DataFrame(
        vt.paradigm_tables(records, bench, "m", image_twin, official=True)["vignette_text_vs_image"]
    )
    tt.validate_task_table("vignette_text_vs_image", off.assign(simulated=True))
    valid = records[records["outcome"] != "invalid"]
    for img_id, txt_id in ((3021, 4021), (3135, 4135)):
        shares = []
        for tid in (img_id, txt_id):
            r = valid[valid["task_id"] == tid]
            resp = np.where(r["outcome"] == "first", r["first"], r["second"])
            counts = pd.Series(resp).value_counts()
            shares.append((counts / counts.sum(), counts, counts.sum()))
        got = off[off["scenario_id"] == img_id].set_index("identity")
        for col, (share, _, _) in zip(("share_image", "share_text"), shares):
            np.testing.assert_allclose(got[col], share.reindex(got.index, fill_value=0))
        assert np.isclose(got["share_image"].sum(), 1.0)  # shares of all answers sum to 1
        ident = got.index[0]
        x1, x2 = shares[0][1].get(ident, 0), shares[1][1].get(ident, 0)
        n1, n2 = shares[0][2], shares[1][2]
        p = (x1 + x2) / (n1 + n2)
        z = (x1 / n1 - x2 / n2) / np.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
        assert got.loc[ident, "z"] == pytest.approx(z)
        assert got.loc[ident, "pval"] == pytest.approx(2 * (1 - norm.cdf(abs(z))))
        # the default divides by the answers that showed the identity: about twice the share
        dflt = paper["vignette_text_vs_image"]
        assert dflt[dflt["scenario_id"] == img_id]["share_image"].mean() > 0.4


def test_polarity_taxonomy_pools_the_terms_of_a_dimension(records: pd.DataFrame) -> None:
    bench = load_benchmark("vignette")
    ours = pd.DataFrame(
        vt.paradigm_tables(records, bench, "m", image_twin)["vignette_polarity_taxonomy"]
    ).set_index("identity")
    valid = records[(records["outcome"] != "invalid") & records["task_id"].between(101, 104)]
    high = valid[valid["task_id"].isin([101, 103])]  # friendly, likable (Sociability, high)
    low = valid[valid["task_id"].isin([102, 104])]

    def share(r: pd.DataFrame, ident: str) -> float:
        shown = (r["first"] == ident) | (r["second"] == ident)
        chosen = np.where(r["outcome"] == "first", r["first"], r["second"]) == ident
        return 100 * chosen.sum() / shown.sum()

    for ident in ours.index:
        assert ours.loc[ident, "polarity"] == pytest.approx(share(high, ident) - share(low, ident))
    assert set(ours["taxonomy"]) == {"Sociability"}


def test_paradigm_tables_reach_the_report(records: pd.DataFrame) -> None:
    tabs = task_tables_from_records(records, load_benchmark("vignette"), "m", n_boot=20)
    for name in (
        "vignette_decision_selection",
        "vignette_perception_selection",
        "vignette_activity_log_odds",
        "vignette_polarity_taxonomy",
    ):
        tt.validate_task_table(name, tabs[name])
    assert set(tabs["vignette_perception_selection"]["dimension"]) == {
        "all",
        "struggle",
        "capability",
        "enjoyment",
        "dislike",
    }
