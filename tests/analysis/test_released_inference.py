"""Valid inference of the released code's analyses (the default definitions): the face-clustered
mixed-model and effect-size tests, Kendall's W permutation test and the ICCs' F intervals, each
checked against statsmodels / SciPy / published values, and on planted null designs where the
released code's tests (``definitions: official``) are off their level."""

from __future__ import annotations

from dataclasses import replace
from itertools import permutations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from stylisticbias.analysis.official_analyses.agreement import (
    icc,
    icc_ci,
    kendalls_w_permutation,
)
from stylisticbias.analysis.official_analyses.effects import (
    CLUSTER_SUFFIX,
    MIXED_CLUSTER_KIND,
    cluster_gls,
    cluster_wald_f,
    effect_sizes,
    mixed_effects,
)
from stylisticbias.analysis.pair_fits import kendalls_w
from stylisticbias.analysis.settings import AnalysisSettings

S = replace(AnalysisSettings(), n_resamples=1, n_permutations=199)
OFFICIAL = replace(S, definitions="official")
VCATS = ("A", "B", "C", "D")
SCATS = ("s1", "s2", "s3", "s4", "s5", "s6")


def _null_frame(rng: np.random.Generator, faces: int = 20) -> pd.DataFrame:
    """Face x variation category x scenario category means under a true null: a face intercept,
    a face x variation-category effect shared by the scenario categories (the variation photo)
    and cell noise -- no category has a different mean."""
    f = np.repeat(np.arange(faces), len(VCATS) * len(SCATS))
    v = np.tile(np.repeat(np.arange(len(VCATS)), len(SCATS)), faces)
    s = np.tile(np.arange(len(SCATS)), faces * len(VCATS))
    y = (
        rng.normal(0, 0.05, faces)[f]
        + rng.normal(0, 0.05, (faces, len(VCATS)))[f, v]
        + rng.normal(0, 0.02, len(f))
    )
    return pd.DataFrame(
        {
            "face_id": [f"f{i:02d}" for i in f],
            "variation_category": np.asarray(VCATS)[v],
            "scenario_category": np.asarray(SCATS)[s],
            "delta": y,
        }
    )


def test_cluster_gls_is_the_gls_sandwich() -> None:
    """The whitened-OLS route equals the GLS estimate and the CR1 sandwich written out with the
    explicit random-intercept covariance; at face variance 0 it is statsmodels' clustered OLS."""
    rng = np.random.default_rng(1)
    df = _null_frame(rng, faces=15).iloc[7:].reset_index(drop=True)  # unequal cluster sizes
    x = np.column_stack(
        [np.ones(len(df))]
        + [(df["variation_category"] == c).to_numpy(float) for c in VCATS[1:]]
        + [(df["scenario_category"] == c).to_numpy(float) for c in SCATS[1:]]
    )
    y = df["delta"].to_numpy()
    g = df["face_id"].to_numpy()
    tau2, sig2 = 0.003, 0.002
    beta, cov, pval, n_g = cluster_gls(y, x, g, tau2, sig2)
    labels = pd.unique(g)
    vinv = [
        np.linalg.inv(sig2 * np.eye((g == c).sum()) + tau2 * np.ones(((g == c).sum(),) * 2))
        for c in labels
    ]
    a = sum(x[g == c].T @ vi @ x[g == c] for c, vi in zip(labels, vinv, strict=True))
    b = np.linalg.solve(
        a, sum(x[g == c].T @ vi @ y[g == c] for c, vi in zip(labels, vinv, strict=True))
    )
    np.testing.assert_allclose(beta, b, rtol=1e-9, atol=1e-12)
    meat = np.zeros_like(a)
    for c, vi in zip(labels, vinv, strict=True):
        u = x[g == c].T @ vi @ (y[g == c] - x[g == c] @ b)
        meat += np.outer(u, u)
    n, k, gg = len(y), x.shape[1], len(labels)
    sand = np.linalg.solve(a, np.linalg.solve(a, meat).T) * gg / (gg - 1) * (n - 1) / (n - k)
    np.testing.assert_allclose(cov, sand, rtol=1e-8)
    t = b / np.sqrt(np.diag(sand))
    np.testing.assert_allclose(pval, 2 * stats.t.sf(np.abs(t), gg - 1), rtol=1e-8)
    assert n_g == gg
    ols = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": pd.factorize(g)[0]})
    _, cov0, _, _ = cluster_gls(y, x, g, 0.0, sig2)
    np.testing.assert_allclose(cov0, ols.cov_params(), rtol=1e-10)


def test_cluster_wald_f_is_statsmodels_wald_with_hotelling_scaling() -> None:
    rng = np.random.default_rng(2)
    df = _null_frame(rng, faces=12)
    x = np.column_stack(
        [np.ones(len(df))] + [(df["variation_category"] == c).to_numpy(float) for c in VCATS[1:]]
    )
    y = df["delta"].to_numpy()
    codes = pd.factorize(df["face_id"])[0]
    f, q, d2, p = cluster_wald_f(x, y, codes, np.array([1, 2, 3]))
    res = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": codes})
    wald = res.wald_test(np.eye(4)[1:], use_f=False, scalar=True).statistic
    assert (q, d2) == (3.0, 9.0)
    assert f == pytest.approx(float(wald) * 9 / (3 * 11), rel=1e-9)
    assert p == pytest.approx(stats.f.sf(f, 3, 9), rel=1e-9)


def test_mixed_model_default_is_face_clustered_and_official_is_mixedlm() -> None:
    df = _null_frame(np.random.default_rng(3), faces=25)
    new = mixed_effects(df, cluster=True).set_index("term")
    old = mixed_effects(df, cluster=False).set_index("term")
    assert (old["method"] == "mixedlm").all()
    assert (new["method"] == "mixedlm" + CLUSTER_SUFFIX).all()
    np.testing.assert_allclose(new["estimate"], old["estimate"], rtol=1e-12, equal_nan=True)
    fe = [t for t in new.index if t.startswith(("Intercept", "C("))]
    assert not np.allclose(new.loc[fe, "std_err"], old.loc[fe, "std_err"])


@pytest.mark.slow
def test_planted_null_mixed_model_pooled_over_rejects_clustered_holds() -> None:
    """A face x variation-category effect (the variation photo, shared by the scenario
    categories) under a true null: the random-intercept-only p-values of the variation terms
    reject several times too often; the face-clustered ones hold the level."""
    rng = np.random.default_rng(4)
    old = new = tests = 0
    for _ in range(60):
        df = _null_frame(rng)
        terms = [f"C(variation_category)[T.{c}]" for c in VCATS[1:]]
        o = mixed_effects(df, cluster=False).set_index("term").loc[terms, "pval"]
        n = mixed_effects(df, cluster=True).set_index("term").loc[terms, "pval"]
        old += int((o < 0.05).sum())
        new += int((n < 0.05).sum())
        tests += len(terms)
    assert old >= 3 * max(new, 0.05 * tests)
    assert new <= 0.09 * tests


def test_planted_null_effect_size_test_pooled_over_rejects_clustered_holds() -> None:
    """The variation-category F of the released code treats the face x category x category
    means as independent; the face-clustered Wald F holds the level on the same null frames,
    and the default interval holds 0 exactly when its test does not reject."""
    rng = np.random.default_rng(5)
    old = new = reps = 0
    faces = pd.Index([f"f{i:02d}" for i in range(20)])
    fm = pd.DataFrame({"face_id": faces, "delta": 0.0})
    for _ in range(150):
        df = _null_frame(rng)
        o = effect_sizes(df, fm, faces, OFFICIAL).set_index("factor").loc["variation_category"]
        n = effect_sizes(df, fm, faces, S).set_index("factor").loc["variation_category"]
        assert o["model_kind"] == "mixed" and n["model_kind"] == MIXED_CLUSTER_KIND
        assert (n["ci_low"] == 0.0) == (n["pval"] >= 0.05)
        old += int(o["pval"] < 0.05)
        new += int(n["pval"] < 0.05)
        reps += 1
    assert old >= 3 * max(new, 0.05 * reps)
    assert new <= 0.09 * reps


def test_kendall_w_permutation_matches_exact_enumeration() -> None:
    """Two raters, five items: the exact permutation distribution of W enumerated here."""
    x = np.array([[1.0, 2.0, 3.0, 5.0, 4.0], [2.0, 1.0, 4.0, 3.0, 5.0]])
    w = kendalls_w(x)[0]
    exact = np.mean(
        [
            kendalls_w(np.vstack([x[0], x[1][list(p)]]))[0] >= w - 1e-12
            for p in permutations(range(5))
        ]
    )
    got = kendalls_w_permutation(x, 20_000, 0)
    assert got == pytest.approx(exact, abs=0.015)


def test_kendall_w_chi2_too_conservative_permutation_holds() -> None:
    """Two models, 25 scenarios, no agreement: the chi-square p of W almost never rejects
    (released code); the permutation test rejects at about its level."""
    rng = np.random.default_rng(6)
    chi = perm = 0
    reps = 400
    for r in range(reps):
        x = rng.normal(size=(2, 25))
        chi += int(kendalls_w(x)[2] < 0.05)
        perm += int(kendalls_w_permutation(x, 199, r) < 0.05)
    assert chi <= 0.01 * reps
    assert 0.03 * reps <= perm <= 0.075 * reps


def test_icc_intervals_match_psych_on_shrout_fleiss() -> None:
    """Shrout & Fleiss (1979) 6 targets x 4 judges; R psych::ICC reports ICC2 0.29 [0.019,
    0.76] and ICC3 0.71 [0.34, 0.95]."""
    sf = np.array(
        [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
        dtype=float,
    )
    i2, i3 = icc(sf)
    (l2, h2), (l3, h3) = icc_ci(sf, 0.95)
    assert (round(i2, 2), round(i3, 2)) == (0.29, 0.71)
    assert (round(l2, 3), round(h2, 2)) == (0.019, 0.76)
    assert (round(l3, 2), round(h3, 2)) == (0.34, 0.95)


def test_icc_intervals_cover_a_true_zero() -> None:
    rng = np.random.default_rng(7)
    cov2 = cov3 = 0
    reps = 400
    for _ in range(reps):
        x = rng.normal(size=(25, 1)) * 0 + rng.normal(size=(1, 2)) + rng.normal(size=(25, 2))
        (l2, h2), (l3, h3) = icc_ci(x, 0.95)
        cov2 += int(l2 <= 0 <= h2)
        cov3 += int(l3 <= 0 <= h3)
    assert 0.92 * reps <= cov3 <= 0.98 * reps
    assert 0.92 * reps <= cov2 <= 0.98 * reps
