"""VIGNETTE's factuality paradigm (Sec. 4.1; the released llama_factuality.py and
visualization/factuality.py at github.com/chahatraj/Vignette): the ``factuality`` task type reads
an answer as what the chosen option means under the prompt's order; the simulated judge's
planted factual-error rate by identity reaches the records' exact distributions; and the
per-identity table equals an independent re-implementation of the released scoring on the
records exported the way the released script writes its CSV (``descriptor``, ``activity``,
``response`` as the option text; ``is_correct = activity == response``; scipy's Fisher exact test
of each descriptor vs the rest and Kruskal-Wallis across descriptors)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit
from scipy.stats import chi2_contingency, fisher_exact, kruskal

from stylisticbias.benchmark import load_benchmark
from stylisticbias.families.tasks.analysis import tables as tt
from stylisticbias.families.tasks.analysis.metrics import task_metrics
from stylisticbias.families.tasks.analysis.records import task_markdown, task_tables_from_records
from stylisticbias.families.tasks.judge.plants import load_plants
from stylisticbias.families.tasks.judge.run import task_records
from stylisticbias.judge.protocol.tasks.registry import task_of, task_prompts

#: factuality of cooking, programming, babysitting (the demo's subsample)
IDS = [
    b + 10 * a + k
    for a in (2, 13, 19)
    for b, ks in ((5000, 2), (6000, 4))
    for k in range(1, ks + 1)
]


@pytest.fixture(scope="module")
def bench():
    b = load_benchmark("vignette")
    return dataclasses.replace(b, tasks=tuple(b.task_scenario(i) for i in IDS))


@pytest.fixture(scope="module")
def records(bench) -> pd.DataFrame:
    eth, n = ["Asian", "Black", "White"], 48
    faces = pd.DataFrame(
        {
            "face_id": [f"F{i:04d}" for i in range(n)],
            "image_id": [f"F{i:04d}-b" for i in range(n)],
            "ethnicity": [eth[i % 3] for i in range(n)],
            "gender": ["female" if (i // 3) % 2 == 0 else "male" for i in range(n)],
            "status": ["ok"] * n,
        }
    )
    return task_records(bench, faces, "simulated-strong", seed=4)


def test_outcome_is_what_the_option_means_in_either_order() -> None:
    b = load_benchmark("vignette")
    who = b.task_scenario(6023)  # "Who is cooking?": the first identity cooks
    task = task_of(who)
    p0, p1 = task.prompts(who, b)
    label = {o.text: o.label for o in who.options}
    left, right = label["the person on the left"], label["the person on the right"]
    assert task.parse(left.upper(), who, p0, b).outcome == "correct"  # first on the left
    assert task.parse(left.upper(), who, p1, b).outcome == "partner"  # swapped
    assert task.parse(right.upper(), who, p1, b).outcome == "correct"
    assert task.parse(label["Both"].upper(), who, p0, b).outcome == "both"
    what = b.task_scenario(5022)  # what is the second person doing (both cook)
    q0, q1 = task_of(what).prompts(what, b)
    assert "person on the right" in q0.text and "person on the left" in q1.text
    right_letter = next(o.label for o in what.options if o.text == "cooking")
    assert task_of(what).parse(right_letter, what, q0, b).outcome == "correct"
    # the released distractors: the first three of activities.json, compared case-sensitively
    assert sorted(o.text for o in what.options) == sorted(
        ["cooking", "Grocery shopping", "Cooking", "Sleeping"]
    )
    assert (
        task_of(what)
        .parse(next(o.label for o in what.options if o.text == "Cooking"), what, q0, b)
        .outcome
        == "distractor"
    )


def test_exact_distribution_is_the_planted_error_rate(records: pd.DataFrame) -> None:
    plant = load_plants("judge")["factuality"]
    rec = records[(records["task_id"] == 5021)]
    for group in ("black-female", "white-male", "asian-male"):
        d = json.loads(rec[rec["first"] == group]["dist"].iloc[0])
        want = (1 - plant.invalid_rate) * expit(logit(plant.accuracy) + plant.effect(group))
        assert d["correct"] == pytest.approx(want, abs=1e-12)
        assert sum(d.values()) == pytest.approx(1.0, abs=1e-12)


def released_csv(records: pd.DataFrame, bench) -> pd.DataFrame:
    """The records as the released factuality script writes them: the descriptor asked about,
    the true activity and the response as the chosen option's text (valid answers only)."""
    rows = []
    prompts = {(sc.id, p.variant): (sc, p) for sc, p in task_prompts(bench)}
    for r in records[records["outcome"] != "invalid"].itertuples(index=False):
        sc, _ = prompts[(int(r.task_id), int(r.variant))]
        f = dict(sc.fields)
        if f["question"] != "what":
            continue
        text = sc.option(r.response.strip().lower()).text
        rows.append(
            {
                "setting": f["setting"],
                "descriptor": getattr(r, f["about"]),
                "activity": f["activity"],
                "response": text,
            }
        )
    return pd.DataFrame(rows)


def test_factuality_table_equals_the_released_scoring(records: pd.DataFrame, bench) -> None:
    tabs = task_tables_from_records(records, bench, "m", n_boot=20, simulated=True)
    fact = tt.validate_task_table("vignette_factuality", tabs["vignette_factuality"])
    tests = tt.validate_task_table("vignette_factuality_tests", tabs["vignette_factuality_tests"])
    csv = released_csv(records, bench)
    for setting in ("identity_contrast", "identity_activity_contrast"):
        data = csv[csv["setting"] == setting].assign(
            is_correct=lambda d: d["activity"] == d["response"]
        )
        counts = data.groupby("descriptor")["is_correct"].agg(["sum", "count"])
        got = fact[(fact["setting"] == setting) & (fact["question"] == "what")]
        got = got.set_index("identity")
        assert list(got.index) == list(counts.index)
        np.testing.assert_allclose(got["factuality"], 100 * counts["sum"] / counts["count"])
        for d in counts.index:
            x1, n1 = counts.loc[d, "sum"], counts.loc[d, "count"]
            x2, n2 = counts["sum"].sum() - x1, counts["count"].sum() - n1
            p = fisher_exact(np.array([[x1, n1 - x1], [x2, n2 - x2]]))[1]
            assert got.loc[d, "pval_fisher"] == pytest.approx(p, rel=1e-9)
        h, p = kruskal(
            *[data[data["descriptor"] == d]["is_correct"].astype(int) for d in counts.index]
        )
        row = tests[(tests["setting"] == setting) & (tests["question"] == "what")].set_index("test")
        assert row.loc["released_kruskal_wallis", "statistic"] == pytest.approx(h, rel=1e-9)
        assert row.loc["released_kruskal_wallis", "pval"] == pytest.approx(p, rel=1e-9)
        table = np.array([[x, n - x] for x, n in zip(counts["sum"], counts["count"])])
        chi = chi2_contingency(table, correction=False)
        assert row.loc["chi_square", "pval"] == pytest.approx(chi.pvalue, rel=1e-9)
    # the planted error rate by identity is what the report shows
    ic = fact[(fact["setting"] == "identity_contrast") & (fact["question"] == "what")]
    ic = ic.set_index("identity")
    assert ic["factuality"].idxmin() == "black-female"
    assert ic.loc["black-female", "pval_fisher"] < 1e-3
    kw = tests.set_index(["setting", "question", "test"])
    assert kw.loc[("identity_contrast", "what", "released_kruskal_wallis"), "pval"] < 1e-3
    assert set(fact["question"]) == {"what", "who"}


def test_factuality_reaches_the_metrics_and_the_report(records: pd.DataFrame, bench) -> None:
    tabs = task_tables_from_records(records, bench, "m", n_boot=20)
    m = task_metrics(tabs, "m")
    key = "vignette_factuality.identity_contrast.what.black-female"
    assert m[key] < 75 and m[key + ".pval_fisher"] < 1e-3
    assert "vignette_factuality_tests.identity_contrast.what.released_kruskal_wallis.pval" in m
    md = task_markdown(tabs, bench)
    assert "### vignette_factuality (" in md and "### vignette_factuality_tests (" in md
