"""phi and delta vs. a plain pandas re-derivation on fixed data (invalids, missing base, exact)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stylisticbias.benchmark import Benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.scores import compute_scores

DEMO = {"age": "elderly", "gender": "male", "ethnicity": "Asian", "body_type": "thin"}


def _img(image_id: str, face_id: str, **extra: object) -> dict:
    return {"image_id": image_id, "face_id": face_id, **DEMO, **extra}


FACES = pd.DataFrame([_img("A--base", "A"), _img("B--base", "B")])
VARS = pd.DataFrame(
    [
        _img("A--beard", "A", category="Facial hair", attribute="Facial hair", value="Full beard"),
        _img("A--cap", "A", category="Accessories", attribute="Accessories", value="Cap"),
        _img("C--cap", "C", category="Accessories", attribute="Accessories", value="Cap"),
    ]
)


def _row(image_id: str, face_id: str, s: int, j: int, k: int, response: str) -> dict:
    """A drawn record; ``response`` is a letter under ordering j (or free text)."""
    pos_letter = {1: "a", 2: "a", 3: "b", 4: "b"}[j]  # App. C.2 orderings
    if response in ("a", "b"):
        choice = "positive" if response == pos_letter else "negative"
        text = f"({response})"
    else:
        choice, text = "invalid", response
    return {
        "image_id": image_id,
        "face_id": face_id,
        "model": "m",
        "engine": "simulated",
        "decoding": "simulated",
        "scenario_id": s,
        "ordering": j,
        "seed": k,
        "response": text,
        "choice": choice,
        "p_pos": 0.5,
        "p_neg": 0.5,
        "p_invalid": 0.0,
        "p_undecided": 0.0,
        "simulated": True,
    }


def _drawn() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for image_id, face_id in [
        ("A--base", "A"),
        ("A--beard", "A"),
        ("A--cap", "A"),
        ("C--cap", "C"),
        ("B--base", "B"),
    ]:
        for s in (1, 25):
            for j in (1, 2, 3, 4):
                for k in (1, 2, 3):
                    r = rng.choice(["a", "b", "b", "Neither."])
                    if image_id == "A--cap" and s == 25:
                        r = "I cannot tell."  # no valid response at all -> phi null
                    rows.append(_row(image_id, face_id, s, j, k, str(r)))
    return pd.DataFrame(rows)


def _pandas_reference(j: pd.DataFrame) -> pd.DataFrame:
    """Independent derivation: r = 1 if the answered letter is the positive one under ordering."""
    pos_letter = {1: "a", 2: "a", 3: "b", 4: "b"}
    letter = j["response"].str.extract(r"^\(([ab])\)$")[0]
    valid = letter.notna()
    r = (letter == j["ordering"].map(pos_letter)).astype(float)
    t = pd.DataFrame(
        {
            "image_id": j["image_id"],
            "scenario_id": j["scenario_id"],
            "r": r.where(valid),
            "valid": valid,
        }
    )
    agg = t.groupby(["image_id", "scenario_id"]).agg(
        phi=("r", "mean"), n_valid=("valid", "sum"), n=("valid", "size")
    )
    return agg.reset_index()


def test_drawn_phi_and_delta_match_reference(benchmark: Benchmark) -> None:
    j = _drawn()
    got = compute_scores(j, FACES, VARS, benchmark)
    ref = _pandas_reference(j)
    m = got.merge(ref, on=["image_id", "scenario_id"], suffixes=("", "_ref"))
    assert len(m) == len(got) == 10
    np.testing.assert_allclose(m["phi"], m["phi_ref"], equal_nan=True)
    assert (m["n_valid"] == m["n_valid_ref"]).all() and (m["n"] == m["n_ref"]).all()
    # phi null when no valid response
    cap25 = got[(got["image_id"] == "A--cap") & (got["scenario_id"] == 25)]
    assert cap25["phi"].isna().all() and (cap25["n_valid"] == 0).all()
    # delta = phi(variation) - phi(base of the same face) per scenario
    base = ref[ref["image_id"] == "A--base"].set_index("scenario_id")["phi"]
    for _, row in got[got["image_id"] == "A--beard"].iterrows():
        assert row["delta"] == pytest.approx(row["phi"] - base[row["scenario_id"]])
    assert got.loc[got["is_base"], "delta"].isna().all()
    assert cap25["delta"].isna().all()  # phi null -> delta null
    assert got.loc[got["image_id"] == "C--cap", "delta"].isna().all()  # base face C not judged
    # denormalised columns
    beard = got[got["image_id"] == "A--beard"].iloc[0]
    assert (beard["category"], beard["value"], beard["age"]) == (
        "Facial hair",
        "Full beard",
        "elderly",
    )
    assert set(got["scenario_category"]) == {"Personality & Social", "Socioeconomic & Appearance"}
    assert got.loc[got["is_base"], "category"].isna().all()


def test_exact_rows(benchmark: Benchmark) -> None:
    rows = []
    probs = {1: (0.6, 0.3), 2: (0.5, 0.5), 3: (0.2, 0.7), 4: (0.0, 0.0)}
    for image_id, face_id in [("A--base", "A"), ("A--beard", "A")]:
        for j, (pp, pn) in probs.items():
            if image_id == "A--beard":
                pp, pn = pn, pp
            r = _row(image_id, face_id, 1, j, 0, "a")
            r.update(
                response=None,
                choice=None,
                p_pos=pp,
                p_neg=pn,
                p_invalid=1 - pp - pn,
                decoding="exact",
                engine="hf",
                simulated=False,
            )
            rows.append(r)
    got = compute_scores(pd.DataFrame(rows), FACES, VARS, benchmark, k=3).set_index("image_id")
    phi_base = (0.6 + 0.5 + 0.2) / (0.9 + 1.0 + 0.9)
    assert got.loc["A--base", "phi"] == pytest.approx(phi_base)
    assert got.loc["A--base", "n_valid"] == pytest.approx(3 * 2.8)
    assert got.loc["A--base", "n"] == 12
    assert got.loc["A--beard", "delta"] == pytest.approx((0.3 + 0.5 + 0.7) / 2.8 - phi_base)
    assert not got["simulated"].any()


def test_auto_prefers_drawn_rows_and_source_switch(benchmark: Benchmark) -> None:
    drawn = _drawn()
    exact = drawn.drop_duplicates(["image_id", "scenario_id", "ordering"]).assign(
        seed=0, response=None, choice=None, p_pos=0.9, p_neg=0.1
    )
    both = pd.concat([drawn, exact], ignore_index=True)
    auto = compute_scores(both, FACES, VARS, benchmark)
    pd.testing.assert_frame_equal(auto, compute_scores(drawn, FACES, VARS, benchmark))
    ex = compute_scores(both, FACES, VARS, benchmark, source="exact")
    np.testing.assert_allclose(ex["phi"], 0.9)


def test_unknown_image_is_an_error(benchmark: Benchmark) -> None:
    j = _drawn()
    j.loc[0, "image_id"] = "Z--ghost"
    with pytest.raises(StylisticBiasError, match="Z--ghost"):
        compute_scores(j, FACES, VARS, benchmark)


def _exact_with_undecided(und_base: float, und_var: float) -> pd.DataFrame:
    """Exact rows of A--base/A--beard (4 orderings) with the given undecided mass per ordering."""
    rows = []
    for image_id, und, (pp, pn) in (
        ("A--base", und_base, (0.5, 0.3)),
        ("A--beard", und_var, (0.3, 0.5)),
    ):
        for j in (1, 2, 3, 4):
            r = _row(image_id, "A", 1, j, 0, "a")
            r.update(
                response=None,
                choice=None,
                p_pos=pp,
                p_neg=pn,
                p_invalid=1 - pp - pn - und,
                p_undecided=und,
                decoding="exact",
                engine="hf",
                simulated=False,
            )
            rows.append(r)
    return pd.DataFrame(rows)


def test_undecided_mass_recorded_bounded_and_excluded(
    benchmark: Benchmark, caplog: pytest.LogCaptureFixture
) -> None:
    from stylisticbias.analysis.undecided import undecided_table

    j = _exact_with_undecided(0.02, 0.1)
    with caplog.at_level("WARNING", logger="stylisticbias.scores"):
        got = compute_scores(j, FACES, VARS, benchmark, undecided_warn=0.01, undecided_max=0.2)
    got = got.set_index("image_id")
    assert got.loc["A--base", "undecided"] == pytest.approx(0.02)
    assert got.loc["A--beard", "undecided"] == pytest.approx(0.1)
    # phi range if the undecided mass had gone all negative / all positive
    assert got.loc["A--base", "phi_low"] == pytest.approx(0.5 / 0.82)
    assert got.loc["A--base", "phi_high"] == pytest.approx(0.52 / 0.82)
    assert got.loc["A--beard", "phi"] == pytest.approx(0.3 / 0.8)
    assert got.loc["A--beard", "delta_low"] == pytest.approx(0.3 / 0.9 - 0.52 / 0.82)
    assert got.loc["A--beard", "delta_high"] == pytest.approx(0.4 / 0.9 - 0.5 / 0.82)
    assert not got["undecided_excluded"].any()
    warns = [r.message for r in caplog.records if "undecided" in r.message]
    assert len(warns) == 1 and "2 of 2" in warns[0]
    # the SBS bound in undecided_mass.csv
    t = undecided_table(got.reset_index()).set_index("category")
    assert t.loc["all", "sbs_low"] == pytest.approx(0.3 / 0.9 - 0.52 / 0.82)
    assert t.loc["all", "sbs_low"] <= t.loc["all", "sbs"] <= t.loc["all", "sbs_high"]
    assert t.loc["all", "n_excluded"] == 0
    # above the hard limit: the variation row is excluded (phi and delta null), counted
    got = compute_scores(j, FACES, VARS, benchmark, undecided_warn=0.01, undecided_max=0.05)
    got = got.set_index("image_id")
    assert got.loc["A--beard", "undecided_excluded"]
    assert np.isnan(got.loc["A--beard", "phi"]) and np.isnan(got.loc["A--beard", "delta"])
    assert not got.loc["A--base", "undecided_excluded"]
    assert undecided_table(got.reset_index()).set_index("category").loc["all", "n_excluded"] == 1
    with pytest.raises(StylisticBiasError, match="undecided_max"):
        compute_scores(j, FACES, VARS, benchmark, undecided_warn=0.1, undecided_max=0.05)


def test_official_parser_and_its_denominator(benchmark: Benchmark) -> None:
    """parser official: responses re-read by the paper's code's rule, unparsed answers kept in
    phi's denominator; exact rows are refused."""
    from stylisticbias.judge.protocol.official_parser import classify_official

    j = _drawn()
    j.loc[j.index[:5], "response"] = "I cannot judge that."  # official: the "a" of "cannot"
    j.loc[j.index[5:8], "response"] = "Neither."  # unparsed under both readers
    got = compute_scores(j, FACES, VARS, benchmark, parser="official").set_index(
        ["image_id", "scenario_id"]
    )
    sc = {s.id: s for s in benchmark.scenarios}
    for (img, sid), g in j.groupby(["image_id", "scenario_id"]):
        pos = 0
        for text, oid in zip(g["response"], g["ordering"]):
            o = benchmark.ordering(int(oid))
            a, b = (
                (sc[sid].positive, sc[sid].negative)
                if o.positive_letter == "a"
                else (sc[sid].negative, sc[sid].positive)
            )
            pos += classify_official(text, o, a, b) == "positive"
        assert got.loc[(img, sid), "phi"] == pytest.approx(pos / len(g))  # denominator: all
    paper = compute_scores(j, FACES, VARS, benchmark).set_index(["image_id", "scenario_id"])
    assert (paper["n_valid"] <= got["n_valid"]).all()
    exact = _exact_with_undecided(0.0, 0.0)
    with pytest.raises(StylisticBiasError, match="official"):
        compute_scores(exact, FACES, VARS, benchmark, parser="official")
    with pytest.raises(StylisticBiasError, match=r"judge\.parser"):
        compute_scores(j, FACES, VARS, benchmark, parser="loose")


def test_both_estimators_side_by_side(benchmark: Benchmark) -> None:
    """Drawn rows: phi_paper is the draw share, phi_exact the p_* expectation; exact rows:
    phi_exact is phi, phi_paper comes from K seeded draws per ordering."""
    j = _drawn()
    j["p_pos"], j["p_neg"], j["p_invalid"] = 0.6, 0.3, 0.1
    got = compute_scores(j, FACES, VARS, benchmark)
    assert np.allclose(got["phi_paper"], got["phi"], equal_nan=True)
    assert np.allclose(got["phi_exact"], 2 / 3)
    beard = got[got["image_id"] == "A--beard"]
    assert np.allclose(beard["delta_exact"], 0.0)  # same p on base and variation
    rows = []
    for image_id, (pp, pn) in (("A--base", (1.0, 0.0)), ("A--beard", (0.0, 0.9))):
        for jj in (1, 2, 3, 4):
            r = _row(image_id, "A", 1, jj, 0, "a")
            r.update(
                response=None,
                choice=None,
                p_pos=pp,
                p_neg=pn,
                p_invalid=1 - pp - pn,
                decoding="exact",
                engine="hf",
                simulated=False,
            )
            rows.append(r)
    ex = compute_scores(pd.DataFrame(rows), FACES, VARS, benchmark, k=3).set_index("image_id")
    assert ex.loc["A--base", "phi_paper"] == 1.0 and ex.loc["A--beard", "phi_paper"] == 0.0
    assert ex.loc["A--beard", "delta_paper"] == -1.0
    assert ex.loc["A--beard", "phi_exact"] == ex.loc["A--beard", "phi"] == 0.0


def test_estimator_comparison_shows_where_they_differ(benchmark: Benchmark) -> None:
    """On a simulated judge the 12-draw estimator has many exact-zero shifts; the exact one none."""
    from stylisticbias.analysis.calibration import synthetic_dataset
    from stylisticbias.analysis.estimators import estimator_comparison
    from stylisticbias.analysis.settings import AnalysisSettings
    from stylisticbias.config import compose, load_group_option
    from stylisticbias_dev.bench.calibration import _judge

    params = compose()
    faces, var = synthetic_dataset(benchmark, 12, seed=3)
    sc = _judge(params, benchmark, load_group_option("model", "simulated-weak"), faces, var)
    t = estimator_comparison(sc, AnalysisSettings()).set_index(["metric", "dimension"])
    zero = t.loc[("zero_rate", "")]
    assert zero["paper"] > 0.03 and zero["exact"] == 0.0
    sbs = t.loc[("sbs", "")]
    assert abs(sbs["paper"] - sbs["exact"]) < 0.02  # the mean agrees in expectation
    assert ("pct_scenarios_significant", "age") in t.index
