"""The released code's analyses, each checked against a computation written here directly with
statsmodels / SciPy (not our helpers)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm

from stylisticbias.analysis.metrics import cell_sums
from stylisticbias.analysis.official_analyses import official_analyses
from stylisticbias.analysis.official_analyses.agreement import icc
from stylisticbias.analysis.official_analyses.effects import mixed_effects
from stylisticbias.analysis.official_analyses.negativity import NEGATIVITY_PAIRS
from stylisticbias.analysis.paper_tables import DIMENSIONS
from stylisticbias.analysis.run import analyze
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import Benchmark

S = replace(AnalysisSettings(), n_resamples=30, n_permutations=30)


@pytest.fixture(scope="module")
def scores(synth: pd.DataFrame) -> pd.DataFrame:
    sc = synth.copy()
    # a per-face random intercept so the mixed model has face variance to estimate
    rng = np.random.default_rng(5)
    bump = dict(zip(sc["face_id"].unique(), rng.normal(0, 0.05, sc["face_id"].nunique())))
    d = ~sc["is_base"]
    sc.loc[d, "delta"] = sc.loc[d, "delta"] + sc.loc[d, "face_id"].map(bump).astype(float)
    return sc


@pytest.fixture(scope="module")
def tables(scores: pd.DataFrame, benchmark: Benchmark) -> dict[str, pd.DataFrame]:
    return analyze(scores, benchmark, S)


def _face_cat_frame(scores: pd.DataFrame, benchmark: Benchmark) -> pd.DataFrame:
    d = scores[~scores["is_base"] & scores["delta"].notna()].copy()
    cat = {sc.id: sc.category for sc in benchmark.scenarios}
    d["scat"] = d["scenario_id"].map(cat).astype(str)
    d["vcat"] = d["category"].astype(str)
    return d.groupby(["face_id", "vcat", "scat"], as_index=False, observed=True)["delta"].mean()


def test_mixed_model_matches_statsmodels(scores, tables, benchmark) -> None:
    df = _face_cat_frame(scores, benchmark)
    res = smf.mixedlm("delta ~ C(vcat) + C(scat)", df, groups=df["face_id"]).fit(
        method="lbfgs", maxiter=2000
    )
    got = tables["mixed_model"].set_index("term")
    assert (got["method"] == "mixedlm+cr1_face").all()  # default: face-clustered inference
    fe = res.fe_params.to_numpy()
    ours = got["estimate"].iloc[: len(fe)].to_numpy()
    np.testing.assert_allclose(ours, fe, atol=1e-6)
    var_f = np.var(res.model.exog @ res.fe_params.to_numpy())
    face_var = float(res.cov_re.iloc[0, 0])
    r2m = var_f / (var_f + face_var + res.scale)
    assert got.loc["r2_marginal", "estimate"] == pytest.approx(r2m, rel=1e-4)
    assert got.loc["face_variance", "estimate"] == pytest.approx(face_var, rel=1e-4)


def test_zero_face_variance_is_the_ols_fit() -> None:
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "face_id": np.repeat([f"f{i}" for i in range(20)], 6),
            "variation_category": np.tile(["A", "B", "C"], 40),
            "scenario_category": np.tile(["x", "x", "x", "y", "y", "y"], 20),
        }
    )
    df["delta"] = (df["variation_category"] == "B") * 0.1 + rng.normal(0, 0.05, len(df))
    out = mixed_effects(df).set_index("term")
    ols = smf.ols("delta ~ C(variation_category) + C(scenario_category)", df).fit()
    if out["method"].iloc[0] == "ols":
        np.testing.assert_allclose(out["estimate"].iloc[: len(ols.params)], ols.params, atol=1e-9)
        assert out.loc["face_variance", "estimate"] == 0.0
    assert np.isfinite(out.loc["r2_marginal", "estimate"])


def test_partial_eta2_matches_anova_lm(scores, tables, benchmark) -> None:
    df = _face_cat_frame(scores, benchmark)
    full = smf.ols("delta ~ C(vcat) + C(scat)", df).fit()
    got = tables["effect_sizes"].set_index("factor")
    for factor, reduced in (
        ("variation_category", "delta ~ C(scat)"),
        ("scenario_category", "delta ~ C(vcat)"),
    ):
        red = smf.ols(reduced, df).fit()
        a = anova_lm(red, full)
        ss = a["ss_diff"].iloc[1]
        assert got.loc[factor, "partial_eta2"] == pytest.approx(ss / (ss + full.ssr), rel=1e-9)
        # the default test: statsmodels' face-clustered Wald, F = W (G - q) / (q (G - 1))
        codes = pd.factorize(df["face_id"])[0]
        cl = smf.ols("delta ~ C(vcat) + C(scat)", df).fit(
            cov_type="cluster", cov_kwds={"groups": codes}
        )
        key = "C(vcat)" if factor == "variation_category" else "C(scat)"
        r = np.array(
            [[float(n == t) for n in cl.params.index] for t in cl.params.index if key in t]
        )
        wald = float(cl.wald_test(r, use_f=False, scalar=True).statistic)
        q, g = r.shape[0], codes.max() + 1
        f = wald * (g - q) / (q * (g - 1))
        assert got.loc[factor, "model_kind"] == "mixed_cluster_wald"
        assert got.loc[factor, "statistic"] == pytest.approx(f, rel=1e-6)
        assert got.loc[factor, "pval"] == pytest.approx(stats.f.sf(f, q, g - q), rel=1e-6)
    d = scores[~scores["is_base"] & scores["delta"].notna()]
    fm = d.groupby("face_id", observed=True).agg(
        delta=("delta", "mean"), **{dim: (col, "first") for dim, col in DIMENSIONS.items()}
    )
    for dim in DIMENSIONS:
        fm[dim] = fm[dim].astype(str)
        one = smf.ols(f"delta ~ C({dim})", fm).fit()
        a = anova_lm(smf.ols("delta ~ 1", fm).fit(), one)
        ss = a["ss_diff"].iloc[1]
        assert got.loc[dim, "partial_eta2"] == pytest.approx(ss / (ss + one.ssr), rel=1e-9)
        assert got.loc[dim, "pval"] == pytest.approx(a["Pr(>F)"].iloc[1], rel=1e-6)
    assert (got["ci_low"] <= got["ci_high"]).all()


def test_negativity_asymmetry_matches_scipy(scores, tables) -> None:
    d = scores[~scores["is_base"] & scores["delta"].notna()]
    got = tables["negativity_asymmetry"].set_index("pair")
    ps = []
    for pr in NEGATIVITY_PAIRS:
        sub = d if pr.gender is None else d[d["gender"] == pr.gender]

        def fm(av, sub=sub):
            m = (sub["attribute"] == av[0]) & (sub["value"] == av[1])
            return sub[m].groupby("face_id", observed=True)["delta"].mean()

        pos, neg = fm(pr.positive), fm(pr.negative)
        common = pos.index.intersection(neg.index)
        ap = np.round(pos[common].abs().to_numpy(), 12)  # ties are ties
        an = np.round(neg[common].abs().to_numpy(), 12)
        r = stats.wilcoxon(an - ap, zero_method="wilcox", alternative="greater")
        ps.append(r.pvalue)
        row = got.loc[pr.label]
        assert row["n_faces"] == len(common)
        assert row["pval"] == pytest.approx(r.pvalue, rel=1e-9)
        assert row["ratio"] == pytest.approx(np.median(an) / np.median(ap), rel=1e-9)
    bh = stats.false_discovery_control(ps)
    np.testing.assert_allclose(got["pval_corr"].to_numpy(), bh, rtol=1e-9)


def test_icc_matches_two_way_anova() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1, (25, 1)) + rng.normal(0, 0.5, (25, 4)) + np.array([0, 0.3, -0.2, 0.1])
    long = pd.DataFrame(
        {"y": x.ravel(), "item": np.repeat(np.arange(25), 4), "rater": np.tile(np.arange(4), 25)}
    )
    a = anova_lm(smf.ols("y ~ C(item) + C(rater)", long).fit())
    msr, msc, mse = a["mean_sq"].iloc[0], a["mean_sq"].iloc[1], a["mean_sq"].iloc[2]
    n, k = x.shape
    want2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    want3 = (msr - mse) / (msr + (k - 1) * mse)
    got2, got3 = icc(x)
    assert got2 == pytest.approx(want2, rel=1e-9)
    assert got3 == pytest.approx(want3, rel=1e-9)
    assert got2 != pytest.approx(got3)  # rater offsets: absolute agreement < consistency


def test_scenario_agreement_matches_scipy(tables) -> None:
    by = tables["sbs_by_scenario"]
    wide = by[by["model"] != "All"].pivot(index="scenario_id", columns="model", values="sbs")
    got = tables["scenario_agreement"].set_index("measure")
    # Friedman: scenarios are the treatments, models the blocks; W = chi2 / (k (n - 1))
    chi2 = stats.friedmanchisquare(*wide.to_numpy()).statistic
    k, n = wide.shape[1], len(wide)
    assert got.loc["kendall_w", "estimate"] == pytest.approx(chi2 / (k * (n - 1)), rel=1e-9)
    rho = stats.spearmanr(wide.iloc[:, 0], wide.iloc[:, 1])[0]
    assert got.loc["spearman", "estimate"] == pytest.approx(rho, rel=1e-9)


def test_preference_screen_and_tails(scores, tables) -> None:
    base = scores[scores["is_base"] & scores["phi"].notna()]
    g = base.groupby(["model", "scenario_id"], observed=True)["phi"]
    m, sd, n = g.mean(), g.std(ddof=1), g.size()
    z = (m - 0.5).abs() / (sd / np.sqrt(n))
    flag = (z >= 3.29) & ((m - 0.5).abs() >= 0.2) & (n >= 50)
    got = tables["base_preference"].set_index(["model", "scenario_id"])
    np.testing.assert_allclose(got["z"].to_numpy(), z.to_numpy(), rtol=1e-9)
    assert (got["flagged"].to_numpy() == flag.to_numpy()).all()
    d = scores[~scores["is_base"] & scores["delta"].notna()]
    summ = tables["preference_summary"].set_index("model")
    for model, dm in d.groupby("model", observed=True):
        a = dm["delta"].abs()
        assert summ.loc[model, "tail_rate_50"] == pytest.approx((a >= 0.5).mean())
        assert summ.loc[model, "tail_rate_75"] == pytest.approx((a >= 0.75).mean())


def test_official_definitions_use_the_released_categories(scores, benchmark) -> None:
    d = scores[~scores["is_base"] & scores["delta"].notna()]
    faces = pd.Index(np.sort(scores["face_id"].astype(str).unique()))
    pooled = {
        f"t12_{k}": cell_sums(d, ["attribute", "value", c], faces=faces)[0]
        for k, c in DIMENSIONS.items()
    }
    pooled["attribute_scenario"] = cell_sums(d, ["attribute", "scenario_id"], faces=faces)[0]
    by = pd.DataFrame({"model": ["m1"], "scenario_id": [1], "sbs": [0.0]})
    off = replace(S, definitions="official")
    cells = pd.DataFrame(
        columns=["model", "scenario_id", "mean_phi", "phi_sd", "n", "z", "flagged"]
    )
    tails = pd.DataFrame({"model": ["m1"], "n": [1], "n_tail_50": [0], "n_tail_75": [0]})
    t = official_analyses(
        pooled, by, cells, tails, faces, benchmark, off, dimensions=DIMENSIONS, pooled_label="All"
    )
    terms = " ".join(t["mixed_model"]["term"])
    assert "Hair color" in terms and "Hair length" in terms and "Socioeconomic]" in terms


def test_interaction_tests_match_statsmodels_and_scipy(scores, tables, benchmark) -> None:
    d = scores[~scores["is_base"] & scores["delta"].notna()]
    fashion = [v for v in benchmark.variations if v.evaluated and v.category == "Fashion"]
    lab = {(v.attribute, v.value): v.label for v in fashion}
    f = d[d["category"] == "Fashion"].copy()
    f["style"] = [lab[(a, v)] for a, v in zip(f["attribute"], f["value"])]
    fl = f.groupby(["face_id", "style"], as_index=False, observed=True).agg(
        delta=("delta", "mean"), group=("age", "first")
    )
    fl["group"] = fl["group"].astype(str)
    # the default definitions: within-face (face fixed effects, the split-plot error)
    full = smf.ols("delta ~ C(face_id) + C(style) + C(style):C(group)", fl).fit()
    a = anova_lm(smf.ols("delta ~ C(face_id) + C(style)", fl).fit(), full)
    got = tables["interaction_tests"]
    t4 = got[(got["table"] == "Table 4") & (got["dimension"] == "age")].set_index(
        ["test", "variation"]
    )
    row = t4.loc[("ols_interaction", "all")]
    assert row["statistic"] == pytest.approx(a["F"].iloc[1], rel=1e-9)
    assert row["pval"] == pytest.approx(a["Pr(>F)"].iloc[1], rel=1e-6)
    ss = a["ss_diff"].iloc[1]
    assert row["partial_eta2"] == pytest.approx(ss / (ss + full.ssr), rel=1e-9)
    mw_p = []
    for style, sdf in fl.groupby("style"):
        y = sdf.loc[sdf["group"] == "young adult", "delta"].to_numpy()
        e = sdf.loc[sdf["group"] == "elderly", "delta"].to_numpy()
        r = stats.mannwhitneyu(y, e, alternative="two-sided")
        sp = np.sqrt(
            ((len(y) - 1) * y.var(ddof=1) + (len(e) - 1) * e.var(ddof=1)) / (len(y) + len(e) - 2)
        )
        got_row = t4.loc[("mann_whitney", style)]
        assert got_row["pval"] == pytest.approx(r.pvalue, rel=1e-9)
        assert got_row["cohens_d_pooled"] == pytest.approx((y.mean() - e.mean()) / sp, rel=1e-9)
        kw = stats.kruskal(*[sdf.loc[sdf["group"] == g, "delta"] for g in sorted(set(sdf.group))])
        assert t4.loc[("kruskal", style), "pval"] == pytest.approx(kw.pvalue, rel=1e-9)
        mw_p.append((style, r.pvalue))
    bh = dict(zip([s for s, _ in mw_p], stats.false_discovery_control([p for _, p in mw_p])))
    for style, q in bh.items():
        assert t4.loc[("mann_whitney", style), "pval_corr"] == pytest.approx(q, rel=1e-9)
    assert 0 < t4.loc[("permutation", "all"), "pval"] <= 1


def test_spearman_boot_equals_scipy_per_resample_and_pair() -> None:
    """The all-pairs, all-resamples Spearman equals scipy's spearmanr call by call (ties from
    the resampling and a tied column included; a constant resampled column gives NaN)."""
    import warnings

    from scipy import stats

    from stylisticbias.analysis.official_analyses.agreement import spearman_boot

    rng = np.random.default_rng(0)
    x = np.round(rng.normal(size=(12, 5)), 1)
    x[:, 4] = x[:, 3]
    x[:, 2] = 0.0
    x[0, 2] = 1.0  # constant in every resample that misses row 0
    idx = rng.integers(0, 12, size=(200, 12))
    got = spearman_boot(x, idx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in range(200):
            for a in range(5):
                for c in range(a + 1, 5):
                    want = stats.spearmanr(x[idx[b], a], x[idx[b], c])[0]
                    if np.isnan(want):
                        assert np.isnan(got[b, a, c])
                    else:
                        assert got[b, a, c] == pytest.approx(want, abs=1e-12)
    assert np.isnan(got[:, 2, 0]).any()


#: ``category_agreement.py``'s SCENARIO_CATEGORIES (label -> category), transcribed
RELEASED_LABEL_CATEGORY = {
    **dict.fromkeys(
        [
            "Competent | Incompetent",
            "Likeable | Unlikeable",
            "Intelligent | Unintelligent",
            "Responsible | Irresponsible",
            "Open-minded | Closed-minded",
            "Conscientious | Careless",
            "Extraverted | Introverted",
            "Emotionally stable | Anxious",
            "Confident | Insecure",
            "Curious | Indifferent",
        ],
        "Personality",
    ),
    **dict.fromkeys(
        [
            "Loving | Cold",
            "Trustworthy | Untrustworthy",
            "Friendly | Unfriendly",
            "Loyal | Disloyal",
            "Polite | Rude",
            "Honest | Fraudulent",
        ],
        "Interpersonal",
    ),
    **dict.fromkeys(
        [
            "Obedient | Unruly",
            "Peaceful | Controversial",
            "Rational | Emotional",
            "Independent | Dependent",
        ],
        "Behavioral",
    ),
    **dict.fromkeys(
        [
            "Home owner | Renter",
            "Educated | Uneducated",
            "Attractive | Unattractive",
            "Stylish | Unstylish",
            "Wealthy | Poor",
        ],
        "Socioeconomic",
    ),
}


def _label(benchmark: Benchmark, sid: int) -> str:
    sc, rel = benchmark.scenario(sid), benchmark.released
    return f"{rel.pole(sc.positive)} | {rel.pole(sc.negative)}"


def test_official_scenario_categories_are_the_released_ones(benchmark) -> None:
    """mixed_effects_eta2.py's index sets are indices into its judgement_scenarios.json: read
    through the protocol's released order they are category_agreement.py's label grouping, and
    differ from Table 1 in two scenarios (Honest, Independent)."""
    from stylisticbias.analysis.official_analyses.effects import scenario_categories

    got = scenario_categories(benchmark, replace(S, definitions="official"))
    assert got == {sid: RELEASED_LABEL_CATEGORY[_label(benchmark, sid)] for sid in got}
    assert len(got) == 25
    table1 = {sc.id: sc.category.split(" ")[0] for sc in benchmark.scenarios}
    assert sorted(i for i in got if got[i] != table1[i]) == [16, 20]
    assert scenario_categories(benchmark, S) == {sc.id: sc.category for sc in benchmark.scenarios}


def _released_w(matrix: np.ndarray) -> tuple[float, float]:
    """category_agreement.kendalls_w (raters x items), transcribed."""
    k, n = matrix.shape
    ranks = np.array([stats.rankdata(r) for r in matrix])
    big_r = ranks.sum(axis=0)
    s = float(np.sum((big_r - k * (n + 1) / 2.0) ** 2))
    w = 12.0 * s / (k**2 * (n**3 - n))
    return w, float(1.0 - stats.chi2.cdf(k * (n - 1) * w, df=n - 1))


def _released_icc(data: np.ndarray) -> float:
    """category_agreement.icc_21 (items x raters; ICC(3,1) consistency), transcribed."""
    n, k = data.shape
    g = data.mean()
    ss_r = k * np.sum((data.mean(axis=1) - g) ** 2)
    ss_c = n * np.sum((data.mean(axis=0) - g) ** 2)
    ss_e = np.sum((data - g) ** 2) - ss_r - ss_c
    ms_r, ms_e = ss_r / (n - 1), ss_e / ((n - 1) * (k - 1))
    return float((ms_r - ms_e) / (ms_r + (k - 1) * ms_e))


def test_official_agreement_is_category_agreement_on_abs_delta(benchmark) -> None:
    from stylisticbias.analysis.official_analyses.agreement import scenario_agreement
    from stylisticbias.analysis.official_analyses.effects import scenario_categories

    rng = np.random.default_rng(11)
    models = ["m1", "m2", "m3"]
    base = rng.normal(0, 0.05, 25)
    rows = [
        (m, sid, float(base[sid - 1] * (-1) ** i + rng.normal(0, 0.03)))
        for i, m in enumerate(models)
        for sid in range(1, 26)
    ]
    by = pd.DataFrame(rows, columns=["model", "scenario_id", "sbs"])
    off = replace(S, definitions="official")
    got = scenario_agreement(by, off, scenario_categories(benchmark, off)).set_index("measure")
    wide = by.pivot(index="scenario_id", columns="model", values="sbs")
    absd = wide.abs().to_numpy()
    cats = ["Personality", "Interpersonal", "Behavioral", "Socioeconomic"]
    lab = [RELEASED_LABEL_CATEGORY[_label(benchmark, int(i))] for i in wide.index]
    cat_matrix = np.array(
        [[absd[[c == x for x in lab], j].mean() for c in cats] for j in range(len(models))]
    )
    w, p = _released_w(cat_matrix)
    assert got.loc["kendall_w", "estimate"] == pytest.approx(w, rel=1e-12)
    assert got.loc["kendall_w", "pval"] == pytest.approx(p, rel=1e-9)
    assert got.loc["icc_3_1", "estimate"] == pytest.approx(_released_icc(absd), rel=1e-12)
    sp = got.loc[["spearman"]].set_index(["model_x", "model_y"])
    rho = stats.spearmanr(absd[:, 0], absd[:, 1])[0]
    assert sp.loc[("m1", "m2"), "estimate"] == pytest.approx(rho, rel=1e-12)
    # the signed shifts over 25 scenarios (the paper setting) give another W
    paper = scenario_agreement(by, S).set_index("measure")
    assert paper.loc["kendall_w", "estimate"] != pytest.approx(w, abs=1e-3)
