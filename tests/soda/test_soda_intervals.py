"""The SODA headline intervals over objects: ``vac`` (Hall's skewness-corrected t on the
kurtosis-adjusted degrees of freedom) and ``significant_share`` (Wilson on the effective number
of tests), each against an independent computation (SciPy, statsmodels, the forward
transformation) and by coverage on a small planted population where the previous interval
(Student t; Clopper-Pearson over the tests as independent) falls short.

Can fail: with ``vac`` back on the Student-t interval the skewed-population coverage reads
0.923 (< 0.935) and the headline check fails; with Clopper-Pearson for the share the clustered
coverage reads 0.858 (< 0.93) and the share checks fail.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.proportion import proportion_confint

from stylisticbias.report.soda_tracking import (
    cluster_share_ci,
    mean_ci,
    share_ci,
    skew_mean_ci,
    soda_metrics,
)


def _covers(ci: dict[str, float], name: str, truth: float) -> bool:
    return ci[f"{name}.ci_low"] <= truth <= ci[f"{name}.ci_high"]


def test_skew_mean_ci_is_student_t_for_a_symmetric_light_tailed_sample() -> None:
    x = np.array([0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5])  # skewness 0, excess kurtosis < 0
    lo, hi = stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    got = skew_mean_ci("v", x, 0.9)
    assert got["v"] == pytest.approx(x.mean())
    assert (got["v.ci_low"], got["v.ci_high"]) == pytest.approx((lo, hi), abs=1e-12)


def test_skew_mean_ci_inverts_halls_transformation() -> None:
    x = np.array([0.09, 0.11, 0.12, 0.13, 0.14, 0.16, 0.21, 0.33])
    n, m, s = len(x), x.mean(), x.std(ddof=1)
    d = x - m  # the adjusted skewness and excess kurtosis, written out
    m2, m3, m4 = (d**2).mean(), (d**3).mean(), (d**4).mean()
    g = m3 / m2**1.5 * math.sqrt(n * (n - 1)) / (n - 2)
    k = ((n + 1) * (m4 / m2**2 - 3) + 6) * (n - 1) / ((n - 2) * (n - 3))
    assert k > 0  # heavy-tailed: fewer degrees of freedom than n - 1
    q = stats.t.ppf(0.975, 2 / (2 / (n - 1) + k / n)) / math.sqrt(n)
    got = skew_mean_ci("v", x, 0.95)
    for bound, target in ((got["v.ci_low"], q), (got["v.ci_high"], -q)):
        t = (m - bound) / s  # the forward transformation at the bound hits the quantile
        assert t + g * t**2 / 3 + g**2 * t**3 / 27 + g / (6 * n) == pytest.approx(target)
    # right skew: the interval reaches further up than the symmetric t interval
    plain = mean_ci("v", x, 0.95)
    assert got["v.ci_high"] > plain["v.ci_high"] and got["v.ci_low"] > plain["v.ci_low"]


def test_skew_mean_ci_covers_the_mean_of_a_skewed_population() -> None:
    """Eight units from Beta(1, 6) (skewness 1.3, as SODA's per-object VAC's 1.2): the
    corrected interval covers the mean at about 0.95, the Student-t interval at about 0.91."""
    reps, truth = 2000, 1 / 7
    x = np.random.default_rng(3).beta(1, 6, (reps, 8))
    hall = np.mean([_covers(skew_mean_ci("v", row, 0.95), "v", truth) for row in x])
    half = stats.t.ppf(0.975, 7) * stats.sem(x, axis=1)
    plain = np.mean(np.abs(x.mean(axis=1) - truth) <= half)  # the Student-t interval
    assert hall >= 0.935, hall
    assert plain < 0.93, plain  # the planted population does discriminate


def test_cluster_share_ci_is_wilson_on_the_cluster_robust_effective_n() -> None:
    hits = np.array([0, 1, 4, 2, 0, 3, 1])
    tests = np.array([9, 9, 8, 9, 7, 9, 9])
    # statsmodels: the share as OLS of the 0/1 outcomes on a constant, variance clustered
    y = np.concatenate([np.r_[np.ones(h), np.zeros(t - h)] for h, t in zip(hits, tests)])
    groups = np.repeat(np.arange(len(tests)), tests)
    fit = OLS(y, np.ones((len(y), 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    p, var = float(fit.params[0]), float(fit.cov_params()[0, 0])
    n_eff = p * (1 - p) / var
    q = stats.t.ppf(0.975, len(tests) - 1)  # Wilson's z replaced by the t quantile
    lo, hi = proportion_confint(p * n_eff, n_eff, alpha=2 * stats.norm.sf(q), method="wilson")
    got = cluster_share_ci("s", hits, tests, 0.95)
    assert got["s"] == pytest.approx(hits.sum() / tests.sum())
    assert (got["s.ci_low"], got["s.ci_high"]) == pytest.approx((lo, hi), abs=1e-12)
    # no hit at all: no between-object variance, Wilson on every test
    none = cluster_share_ci("s", np.zeros(4), np.full(4, 9), 0.95)
    q4 = stats.t.ppf(0.975, 3)
    assert none["s.ci_low"] == pytest.approx(0.0, abs=1e-12)
    assert none["s.ci_high"] == pytest.approx(q4**2 / (36 + q4**2))
    assert cluster_share_ci("s", [2], [9], 0.95) == {"s": pytest.approx(2 / 9)}


def test_cluster_share_ci_covers_when_the_objects_differ_in_power() -> None:
    """Eight objects of nine tests, each object's rejection probability Beta(0.9, 5.1) (mean
    0.15, design effect 2.1): the cluster interval covers at about 0.95, Clopper-Pearson
    over the 72 tests as independent at about 0.85."""
    rng = np.random.default_rng(0)
    reps, truth = 1000, 0.15
    wilson = cp = 0
    for _ in range(reps):
        hits = rng.binomial(9, rng.beta(0.9, 5.1, 8))
        wilson += _covers(cluster_share_ci("s", hits, np.full(8, 9), 0.95), "s", truth)
        cp += _covers(share_ci("s", int(hits.sum()), 72, 0.95), "s", truth)
    assert wilson / reps >= 0.93, wilson / reps
    assert cp / reps <= 0.9, cp / reps


def test_headline_uses_the_object_intervals() -> None:
    rng = np.random.default_rng(1)
    objects = [f"o{i}" for i in range(6)]
    bds = pd.DataFrame(
        [
            {"object": o, "dimension": "gender", "group": g, "bds": rng.random() / 5, "pval": p}
            for o in objects
            for g, p in zip(["men", "women", "x"], rng.random(3) / 8)
        ]
    )
    bds.loc[0, "pval"] = np.nan  # an untested row counts nowhere
    vac = pd.DataFrame(
        [
            {"object": o, "condition": c, "vac": rng.gamma(1.0) / 5}
            for o in objects
            for c in ("base", "gender:women")
        ]
    )
    tables = {
        "soda_bds": bds,
        "soda_cds": pd.DataFrame(),
        "soda_vac": vac,
        "soda_mitigation": pd.DataFrame(),
    }
    head, _ = soda_metrics(tables, {}, 0.05, 0.95)
    per_vac = vac.groupby("object")["vac"].mean()
    want = skew_mean_ci("vac", per_vac.to_numpy(), 0.95)
    assert {k: head[k] for k in want} == pytest.approx(want)
    assert head["vac.ci_high"] != pytest.approx(mean_ci("vac", per_vac, 0.95)["vac.ci_high"])
    tested = bds.dropna(subset=["pval"])
    hits = (tested["pval"] < 0.05).groupby(tested["object"]).sum()
    sizes = tested.groupby("object").size()
    want = cluster_share_ci("significant_share", hits.to_numpy(), sizes.to_numpy(), 0.95)
    assert {k: head[k] for k in want} == pytest.approx(want)
    assert head["significant_share"] == pytest.approx((tested["pval"] < 0.05).mean())
