"""VS, Pareto, cross-model variance, regressions and agreement vs. independent computations."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from stylisticbias.analysis.bootstrap import bc_percentile_ci
from stylisticbias.analysis.structure import (
    cross_model_variance,
    kendalls_w,
    model_pair_regressions,
    pareto,
    profile_agreement,
)
from stylisticbias.analysis.vs import variation_strength


def _vs_pandas(base: pd.DataFrame, col: str, ddof: int) -> float:
    means = base.groupby(["scenario_id", col]).phi.mean()
    return float(means.groupby("scenario_id").std(ddof=ddof).mean())


@pytest.mark.parametrize("ddof", [0, 1])
def test_vs_matches_pandas(synth: pd.DataFrame, ddof: int) -> None:
    out = variation_strength(
        synth, {"age": "age", "body": "body_type"}, ddof=ddof, n_resamples=200, n_permutations=200
    )
    base = synth[synth.is_base & (synth.model == "m1")]
    row = out[(out.model == "m1")].set_index("dimension")
    assert_allclose(row.loc["age", "vs"], _vs_pandas(base, "age", ddof))
    assert_allclose(row.loc["body", "vs"], _vs_pandas(base, "body_type", ddof))
    # age is planted (0.04 per step), body is not
    assert row.loc["age", "pval"] < 0.01 < row.loc["body", "pval"]
    assert row.loc["age", "range_low"] <= row.loc["age", "vs"] <= row.loc["age", "range_high"]


def test_vs_permutation_p_is_permutation_test(synth: pd.DataFrame) -> None:
    base = synth[synth.is_base & (synth.model == "m1")]
    obs = _vs_pandas(base, "ethnicity", 0)
    rng = np.random.default_rng(5)
    faces = base.drop_duplicates("face_id")[["face_id", "ethnicity"]]
    null = []
    for _ in range(300):
        lab = dict(zip(faces.face_id, rng.permutation(faces.ethnicity.to_numpy())))
        null.append(_vs_pandas(base.assign(ethnicity=base.face_id.map(lab)), "ethnicity", 0))
    p_ref = (1 + np.sum(np.array(null) >= obs)) / 301
    out = variation_strength(base, {"ethnicity": "ethnicity"}, n_resamples=0, n_permutations=2000)
    assert abs(out.pval.iloc[0] - p_ref) < 0.08


def test_vs_degenerate(synth: pd.DataFrame, caplog: pytest.LogCaptureFixture) -> None:
    one_group = synth[synth.gender == "male"]
    with pytest.raises(ValueError, match="1 group"):
        variation_strength(one_group, {"gender": "gender"}, n_resamples=0, n_permutations=0)
    with pytest.raises(ValueError, match="no base-face rows"):
        variation_strength(synth[~synth.is_base], {"age": "age"})
    missing = synth[~(synth.is_base & (synth.model == "m1") & (synth.scenario_id == 7))]
    with caplog.at_level(logging.WARNING):
        out = variation_strength(missing, {"age": "age"}, n_resamples=0, n_permutations=0)
    assert "scenario(s) [7]" in caplog.text
    assert out.set_index("model").loc["m1", "n_scenarios"] == 24
    nan_phi = synth.copy()
    nan_phi.loc[nan_phi.is_base & (nan_phi.face_id == "f0003"), "phi"] = np.nan
    assert np.isfinite(
        variation_strength(nan_phi, {"age": "age"}, n_resamples=0, n_permutations=0).vs
    ).all()


def test_bc_interval_matches_its_formula_and_falls_back_outside_the_replicates() -> None:
    rng = np.random.default_rng(3)
    boot = rng.normal(1.0, 0.2, size=(4000, 1))
    obs = np.array([0.9])
    lo, hi, fb = bc_percentile_ci(boot, obs, 0.95)
    z0 = stats.norm.ppf(np.mean(boot[:, 0] < 0.9))
    zc = stats.norm.ppf(0.975)
    want = np.percentile(boot[:, 0], stats.norm.cdf([2 * z0 - zc, 2 * z0 + zc]) * 100)
    assert_allclose([lo[0], hi[0]], want)
    assert not fb[0]
    # the estimate below every replicate (VS near 0): the BC bounds would collapse onto the
    # minimum; the fallback is the percentile interval widened down to the estimate
    obs = np.array([boot.min() - 0.05])
    lo, hi, fb = bc_percentile_ci(boot, obs, 0.95)
    assert fb[0] and lo[0] == obs[0]
    assert_allclose(hi[0], np.percentile(boot[:, 0], 97.5))
    obs = np.array([boot.max() + 0.05])
    lo, hi, fb = bc_percentile_ci(boot, obs, 0.95)
    assert fb[0] and hi[0] == obs[0]
    assert_allclose(lo[0], np.percentile(boot[:, 0], 2.5))


def test_vs_near_zero_range_contains_the_estimate(caplog: pytest.LogCaptureFixture) -> None:
    """Group means exactly equal (VS = 0), every replicate > 0: one warning, CI holds the 0."""
    rng = np.random.default_rng(0)
    vals = rng.uniform(0.2, 0.8, size=(20, 3))  # 20 faces per group x 3 scenarios
    rows = [
        ("m1", True, float(vals[perm[f], s]), f"{g}{f}", s, g)
        for g, perm in (("young", np.arange(20)), ("old", rng.permutation(20)))
        for f in range(20)
        for s in range(3)
    ]
    df = pd.DataFrame(rows, columns=["model", "is_base", "phi", "face_id", "scenario_id", "age"])
    with caplog.at_level(logging.WARNING):
        out = variation_strength(df, {"age": "age"}, n_resamples=300, n_permutations=0)
    row = out.iloc[0]
    assert row.vs == pytest.approx(0.0, abs=1e-12)
    assert row.range_low == pytest.approx(0.0, abs=1e-12) and row.range_high > 0.01
    warns = [r for r in caplog.records if "outside its bootstrap distribution" in r.message]
    assert len(warns) == 1 and "m1/age" in warns[0].message


def test_pareto() -> None:
    eff = pd.DataFrame({"variation": list("abcde"), "abs_effect": [0.1, 0.4, 0.2, 0.2, 0.1]})
    d, k = pareto(eff, share=0.8)
    assert list(d.variation) == ["b", "c", "d", "a", "e"]
    assert_allclose(d.cum_share, [0.4, 0.6, 0.8, 0.9, 1.0])
    assert k == 3 and d.within_threshold.sum() == 3
    with pytest.raises(ValueError, match="NaN"):
        pareto(eff.assign(abs_effect=[np.nan, 1, 1, 1, 1]))
    with pytest.raises(ValueError, match="no variations"):
        pareto(eff.iloc[:0])


def _per_model() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    x = rng.normal(0, 0.05, 25)
    rows = [("A", s + 1, x[s]) for s in range(25)]
    rows += [("B", s + 1, 0.4 * x[s] + rng.normal(0, 0.01)) for s in range(25)]
    rows += [("C", s + 1, -x[s] + rng.normal(0, 0.05)) for s in range(25)]
    return pd.DataFrame(rows, columns=["model", "scenario_id", "effect"])


def test_regressions_and_variance_match_scipy_pandas() -> None:
    pm = _per_model()
    reg = model_pair_regressions(pm)
    assert len(reg) == 6
    r = reg[(reg.model_x == "A") & (reg.model_y == "B")].iloc[0]
    wide = pm.pivot(index="scenario_id", columns="model", values="effect")
    ref = stats.linregress(wide.A, wide.B)
    assert_allclose(
        [r.slope, r.intercept, r.r, r.pval], [ref.slope, ref.intercept, ref.rvalue, ref.pvalue]
    )
    assert r.ci_low < 0.4 < r.ci_high
    cmv = cross_model_variance(pm, ddof=1)
    assert_allclose(cmv.variance, wide.var(axis=1, ddof=1).to_numpy())
    assert cmv.top_quartile.sum() == int(np.ceil(25 * 0.25))


def test_kendalls_w_and_spearman() -> None:
    r = np.array([[1, 2, 3, 4, 5], [2, 1, 3, 5, 4], [1, 3, 2, 4, 5.0]])
    w, _chi2, p = kendalls_w(r)
    m, n = r.shape
    s = ((r.sum(0) - m * (n + 1) / 2) ** 2).sum()
    assert_allclose(w, 12 * s / (m**2 * (n**3 - n)))
    assert_allclose(p, stats.chi2.sf(m * (n - 1) * w, n - 1))
    assert_allclose(kendalls_w(np.tile(np.arange(5.0), (4, 1)))[0], 1.0)
    with pytest.raises(ValueError):
        kendalls_w(r[:1])
    with pytest.raises(ValueError, match="same rank"):
        kendalls_w(np.ones((3, 4)))
    pm = _per_model().rename(columns={"scenario_id": "variation"})
    ag = profile_agreement(pm)
    wide = pm.pivot(index="variation", columns="model", values="effect")
    row = ag[(ag.model_a == "A") & (ag.model_b == "C")].iloc[0]
    assert_allclose(row.effect, stats.spearmanr(wide.A, wide.C)[0])
    assert ag.measure.iloc[-1] == "kendall_w"


def test_structure_degenerate_input(caplog: pytest.LogCaptureFixture) -> None:
    """One model, all-equal effects, NaN, a scenario missing for one model."""
    pm = _per_model()
    # a scenario missing for one model: variance over the models that have it, regression on
    # the scenarios both have (as scipy on the intersection)
    gap = pm[~((pm.model == "B") & (pm.scenario_id == 7))]
    cmv = cross_model_variance(gap, ddof=1)
    s7 = cmv[cmv.scenario_id == 7].iloc[0]
    assert s7.n_models == 2
    assert_allclose(
        s7.variance, np.var(pm[(pm.scenario_id == 7) & (pm.model != "B")].effect, ddof=1)
    )
    reg = model_pair_regressions(gap)
    r = reg[(reg.model_x == "A") & (reg.model_y == "B")].iloc[0]
    wide = gap.pivot(index="scenario_id", columns="model", values="effect").dropna()
    assert r.n == 24
    assert_allclose(r.slope, stats.linregress(wide.A, wide.B).slope)
    # one model: variance undefined (NaN, warned), no pairs to regress
    one = pm[pm.model == "A"]
    with caplog.at_level(logging.WARNING):
        cmv1 = cross_model_variance(one, ddof=1)
    assert cmv1.variance.isna().all() and "fewer than 2 model" in caplog.text
    assert model_pair_regressions(one).empty
    ag1 = profile_agreement(one.rename(columns={"scenario_id": "variation"}))
    assert ag1.empty
    # all-equal effects: zero variance; a constant x is not fitted (NaN), not a crash
    flat = pm.assign(effect=0.1)
    assert_allclose(cross_model_variance(flat).variance, 0.0, atol=1e-12)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        reg_flat = model_pair_regressions(flat)
    assert reg_flat.slope.isna().all() and "constant x" in caplog.text
    # NaN effect: the scenario drops out of that pair only
    nan = pm.copy()
    nan.loc[(nan.model == "C") & (nan.scenario_id == 3), "effect"] = np.nan
    reg_nan = model_pair_regressions(nan)
    assert set(reg_nan[(reg_nan.model_x == "C") | (reg_nan.model_y == "C")].n) == {24}
    assert set(reg_nan[(reg_nan.model_x != "C") & (reg_nan.model_y != "C")].n) == {25}
    # pareto with every |SBS| zero: share undefined, warned, nothing reaches it
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        d, k = pareto(pd.DataFrame({"variation": list("abc"), "abs_effect": [0.0, 0.0, 0.0]}))
    assert k == 0 and d.cum_share.isna().all() and "every |SBS| is 0" in caplog.text


def test_bc_interval_always_contains_its_estimate() -> None:
    """0 < share of replicates below the estimate < (1 - ci)/2: the BC bounds both fall above
    the estimate (the demo's [0.01962, 0.01963] around VS 0.0201); the fallback must hold it."""
    rng = np.random.default_rng(5)
    boot = rng.normal(1.0, 0.2, size=(2000, 1))
    for share in (0.001, 0.005, 0.01, 0.02, 0.0249, 0.98, 0.99, 0.999):
        obs = np.array([np.quantile(boot[:, 0], share)])
        lo, hi, _ = bc_percentile_ci(boot, obs, 0.95)
        assert lo[0] <= obs[0] <= hi[0], (share, lo[0], obs[0], hi[0])
    # many random columns with estimates anywhere, some in the tails
    boot = rng.gamma(2.0, 0.01, size=(500, 300))
    obs = np.quantile(boot, rng.uniform(0, 1, 300), axis=0).diagonal()
    lo, hi, _ = bc_percentile_ci(boot, obs, 0.95)
    assert np.all((lo <= obs) & (obs <= hi))


def _grouped_phi(
    rng: np.random.Generator, spread: float, n_faces: int = 160, n_scen: int = 10, k: int = 4
) -> tuple[pd.DataFrame, float]:
    """Face-level phi with a face random effect, scenario noise and 12-draw binning; the true
    across-group SD (ddof 0) of the population group means is returned with it."""
    g = rng.integers(0, k, n_faces)
    eff = spread * np.linspace(-1.0, 1.0, k)
    p = (
        0.5
        + eff[g][:, None]
        + rng.normal(0, 0.08, (n_faces, 1))
        + rng.normal(0, 0.04, (n_faces, n_scen))
    )
    phi = rng.binomial(12, np.clip(p, 0.0, 1.0)) / 12
    rows = [
        ("m", True, phi[f, s], f"f{f}", s, f"g{g[f]}")
        for f in range(n_faces)
        for s in range(n_scen)
    ]
    df = pd.DataFrame(rows, columns=["model", "is_base", "phi", "face_id", "scenario_id", "grp"])
    return df, float(np.std(eff))


def test_debiased_vs_matches_the_anova_variance_component() -> None:
    """Balanced groups: theta^2 = (K-1)/K (MSB - MSW)/n per scenario (one-way ANOVA by pandas)."""
    rng = np.random.default_rng(11)
    k, n = 4, 30
    df, _ = _grouped_phi(rng, 0.03, n_faces=k * n, n_scen=6, k=k)
    df["grp"] = df["face_id"].map(lambda f: f"g{int(f[1:]) % k}")
    out = variation_strength(df, {"d": "grp"}, n_resamples=0, n_permutations=0).iloc[0]
    theta2, floor2 = [], []
    for _, d in df.groupby("scenario_id"):
        gm = d.groupby("grp").phi.mean()
        msb = n * ((gm - gm.mean()) ** 2).sum() / (k - 1)
        msw = d.groupby("grp").phi.var(ddof=1).mean()
        theta2.append((k - 1) / k * (msb - msw) / n)
        floor2.append((k - 1) / k * msw / n)
    t = np.mean(theta2)
    assert_allclose(out.vs_debiased, np.sign(t) * np.sqrt(abs(t)), rtol=1e-9)
    assert_allclose(out.noise_floor, np.sqrt(np.mean(floor2)), rtol=1e-9)


def test_debiased_vs_removes_the_noise_floor_and_its_interval_covers() -> None:
    """Paper VS sits at the noise floor under the null; the de-biased one is unbiased (variance
    scale) and its interval covers the truth. 60 replicates per plant: a true coverage of 0.95
    gives >= 0.87 with probability ~0.99; today's intervals (none exists / percentile) fail."""
    rng = np.random.default_rng(2)
    for spread in (0.0, 0.03):
        paper, t2, cover = [], [], []
        for r in range(60):
            df, truth = _grouped_phi(rng, spread)
            o = variation_strength(df, {"d": "grp"}, n_resamples=300, n_permutations=0, seed=r)
            o = o.iloc[0]
            paper.append(o.vs)
            t2.append(np.sign(o.vs_debiased) * o.vs_debiased**2)
            cover.append(o.debiased_ci_low <= truth <= o.debiased_ci_high)
            assert o.debiased_ci_low <= o.vs_debiased <= o.debiased_ci_high
            assert o.noise_floor > 0.01
        se = np.std(t2) / np.sqrt(len(t2))
        assert abs(np.mean(t2) - truth**2) < 3 * se + 1e-6, (spread, np.mean(t2), truth**2)
        assert np.mean(cover) >= 0.87, (spread, np.mean(cover))
        if spread == 0.0:
            assert np.mean(paper) > 0.012  # the paper's VS: biased up by the noise floor
