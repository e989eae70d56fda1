"""The answer diagnostics' tests and intervals resample the face: a face-clustered SE equal to
statsmodels' weighted HC1, a position test that holds its level when the faces' tendencies are
skewed, invalid-rate intervals that cover under heterogeneous faces and rare invalid answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from numpy.testing import assert_allclose
from scipy import stats
from scipy.special import expit, logit

from stylisticbias.analysis.diagnostics import (
    ResponseSums,
    bias_tables,
    clustered_rate_ci,
    clustered_ratio_se,
)


def _sums(name: str, first, valid, inv=None, total=None) -> ResponseSums:
    f = len(first)
    inv = np.zeros((f, 1)) if inv is None else inv
    total = np.ones((f, 1)) if total is None else total
    return ResponseSums(
        model=name,
        faces=pd.Index([f"f{i}" for i in range(f)]),
        first=np.asarray(first, float),
        letter_a=np.asarray(first, float),
        valid=np.asarray(valid, float),
        invalid_fs=inv,
        total_fs=total,
        scenarios=np.arange(1, inv.shape[1] + 1),
        n_responses=int(np.sum(valid)),
    )


def test_clustered_t_without_resamples_equals_statsmodels_wls_hc1() -> None:
    """share = WLS of per-face shares on a constant (weights = valid answers), SE = HC1 (one row
    per face = one cluster), p-value on F - 1 df."""
    rng = np.random.default_rng(1)
    valid = rng.integers(20, 400, 12).astype(float)
    first = rng.binomial(valid.astype(int), expit(rng.normal(0.1, 0.4, 12))).astype(float)
    r, se = clustered_ratio_se(first[:, None], valid[:, None])
    fit = sm.WLS(first / valid, np.ones((12, 1)), weights=valid).fit(cov_type="HC1", use_t=True)
    assert_allclose(r[0], fit.params[0], rtol=1e-12)
    assert_allclose(se[0], fit.bse[0], rtol=1e-10)
    pos, _, _ = bias_tables([_sums("m", first, valid)], n_resamples=0, ci=0.95, seed=0)
    ref = sm.WLS(first / valid - 0.5, np.ones((12, 1)), weights=valid).fit(
        cov_type="HC1", use_t=True
    )
    assert_allclose(pos.pval.iloc[0], ref.pvalues[0], rtol=1e-8)


def test_position_test_holds_its_level_under_skewed_face_tendencies() -> None:
    """90% of faces lean slightly to the first option, 10% strongly away, centred so that the
    pooled share is 0.5: the former per-face signed-rank test (of the pseudo-median) rejects 0.73
    of these replicates at alpha 0.05; the face bootstrap-t of the pooled share about 0.09 (a
    two-point mixture over 40 faces is a stress case; 0.05-0.07 in the benchmark)."""
    rng = np.random.default_rng(7)
    faces, reps = 40, 150
    sums = []
    for r in range(reps):
        t = np.where(rng.random(faces) < 0.1, -0.9, 0.1) - 0.00338
        eta = rng.normal(0.0, 1.0, faces)
        valid = np.maximum(4, np.rint(rng.lognormal(np.log(600), 0.8, faces))).astype(int)
        half = valid // 2
        a = rng.binomial(half, expit(eta + t))  # positive written first, chosen
        b = rng.binomial(valid - half, expit(eta - t))  # positive written second, chosen
        sums.append(_sums(f"r{r}", a + (valid - half - b), valid))
    pos, _, _ = bias_tables(sums, n_resamples=199, ci=0.95, seed=3)
    rate = float((pos.pval < 0.05).mean())
    assert rate < 0.15, rate


def _rate_ci_reference(num: np.ndarray, den: np.ndarray, ci: float) -> tuple[float, float]:
    """The invalid-rate interval of one cell, written out: CR1 SE from statsmodels (WLS of the
    per-face rates on a constant, weights = answers, HC1), kurtosis from SciPy."""
    has = den > 0
    num, den = num[has], den[has]
    k = len(den)
    fit = sm.WLS(num / den, np.ones((k, 1)), weights=den).fit(cov_type="HC1")
    r, se = float(fit.params[0]), float(fit.bse[0])
    tau2 = max(
        float(np.sum(den / den.sum() * (num / den - r) ** 2)) - r * (1 - r) * k / den.sum(), 0
    )
    lam = den**2 * tau2 + den * r * (1 - r)
    nu_s = lam.sum() ** 2 / np.sum(lam**2)
    u = (num - r * den) / np.sqrt(lam)
    g2 = stats.kurtosis(np.r_[u, -u], fisher=True, bias=True)  # moments about 0
    kappa = 3 + ((k + 1) * g2 + 6) * (k - 1) / ((k - 2) * (k - 3))
    nu_k = nu_s * 2 / max(kappa - 1, 2)
    q = 1 - (1 - ci) / 2
    lo = r * np.exp(-stats.t.ppf(q, max(nu_s, 1)) * se / r)
    hi = min(r * np.exp(stats.t.ppf(q, max(nu_k, 1)) * se / r), 1.0)
    return lo, hi


def test_invalid_rate_interval_equals_its_written_out_computation() -> None:
    """Log-scale t interval around the face-clustered (statsmodels HC1) SE: lower bound on the
    Satterthwaite df, upper on the kurtosis-adjusted df; no invalid answer: the exact bound with
    the faces as the units; one face: NaN."""
    rng = np.random.default_rng(3)
    faces = 14
    den = rng.poisson(rng.lognormal(np.log(300), 0.6, (faces, 3))).astype(float)
    den[[2, 5], 1] = 0.0  # two faces not asked in one cell
    p = expit(logit(0.01) + rng.normal(0.0, 1.2, (faces, 1)) + rng.normal(0.0, 0.5, (faces, 3)))
    num = rng.binomial(den.astype(int), p).astype(float)
    lo, hi = clustered_rate_ci(num, den, 0.95)
    for c in range(3):
        ref = _rate_ci_reference(num[:, c], den[:, c], 0.95)
        assert_allclose([lo[c], hi[c]], ref, rtol=1e-9)
        assert lo[c] < num[:, c].sum() / den[:, c].sum() < hi[c]
    lo, hi = clustered_rate_ci(np.zeros((faces, 1)), den[:, :1], 0.95)
    assert lo[0] == 0.0 and hi[0] == pytest.approx(1 - 0.025 ** (1 / faces))
    lo, hi = clustered_rate_ci(num[:1, :1], den[:1, :1], 0.95)
    assert np.isnan(lo[0]) and np.isnan(hi[0])


def test_rare_invalid_rate_interval_covers() -> None:
    """Rare invalid answers (base 0.5 %) concentrated on some of 15 faces (logit sd 1 per face,
    0.5 per face x scenario, unequal answers; a quarter of the cells without an invalid answer):
    the former symmetric log-scale face bootstrap-t covers 0.899 of these cells and pooled rates,
    the clustered t interval 0.934 (0.936-0.961 in the benchmark's rare and 15-face designs)."""
    rng = np.random.default_rng(11)
    faces, reps, scen = 15, 400, 4
    c = np.array([-0.4, 0.0, 0.3, 0.6])
    z = rng.normal(0.0, 1.0, 2_000_000) + rng.normal(0.0, 0.5, 2_000_000)
    truth = np.array([expit(logit(0.005) + ci + z).mean() for ci in c])
    truth = np.r_[truth.mean(), truth]
    sums = []
    for r in range(reps):
        total = rng.poisson(np.outer(rng.lognormal(0.0, 0.6, faces), np.full(scen, 380.0)))
        total = np.maximum(1, total)
        p = expit(
            logit(0.005)
            + c[None, :]
            + rng.normal(0.0, 1.0, (faces, 1))
            + rng.normal(0.0, 0.5, (faces, scen))
        )
        inv = rng.binomial(total, p).astype(float)
        first = rng.binomial(40, 0.5, faces).astype(float)
        sums.append(_sums(f"r{r}", first, np.full(faces, 40.0), inv, total.astype(float)))
    _, _, inv = bias_tables(sums, n_resamples=199, ci=0.95, seed=5)
    tv = truth[inv.scenario_id.to_numpy()]
    cov = float(((inv.ci_low <= tv) & (tv <= inv.ci_high)).mean())
    assert 0.92 <= cov <= 0.97, cov
    assert (inv.ci_low >= 0).all() and (inv.ci_high <= 1).all()
