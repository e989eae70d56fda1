"""Tests that respect the face as the sampling unit when two models judge the same photos.

Both models see the same photos, so their full-sample SBS profiles share the photos' sampling
noise: the plain Spearman / OLS tests of agreement (kept under ``analysis.definitions:
official``) find agreement where the population profiles have none. The default cross-fits the
profiles on face halves (``structure.cross_fit_spearman`` / ``cross_fit_line``). The designs
below are the failure in miniature (``protocols.stylisticbias.valid_inference.tables`` has the
full-size calibration): the plain tests reject a true null in most replicates, the cross-fitted
ones at about their level, and keep their power at a planted profile. Also: the expanded
percentile interval of small cells, and the within-face interaction F-test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci, ratio_boot
from stylisticbias.analysis.interactions import ols_interaction
from stylisticbias.analysis.metrics import face_t_interval
from stylisticbias.analysis.significance import contrast_ttest
from stylisticbias.analysis.structure import (
    cross_fit_spearman,
    model_pair_regressions,
    profile_agreement,
)

FACES, ITEMS, REPS = 30, 20, 200


def _draw(rng: np.random.Generator, signal: float) -> tuple[np.ndarray, np.ndarray]:
    """Two models' face x item shifts from one set of photos: each face x item photo has an
    appeal both models see (sd 1), each model its own noise (sd 0.5); ``signal``: the sd of a
    true profile shared by the models (0 = none)."""
    truth = signal * rng.normal(size=ITEMS)
    photo = rng.normal(size=(FACES, ITEMS))
    x = truth + photo + 0.5 * rng.normal(size=(FACES, ITEMS))
    y = truth + photo + 0.5 * rng.normal(size=(FACES, ITEMS))
    return x, y


def _profiles(rng: np.random.Generator, signal: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The full-sample and per-face-half profiles of :func:`_draw` as the tables carry them."""
    x, y = _draw(rng, signal)
    full, halves = [], []
    for m, v in (("a", x), ("b", y)):
        full.append(pd.DataFrame({"model": m, "item": range(ITEMS), "effect": v.mean(0)}))
        for h in (0, 1):
            halves.append(
                pd.DataFrame(
                    {"model": m, "half": h, "item": range(ITEMS), "effect": v[h::2].mean(0)}
                )
            )
    return pd.concat(full), pd.concat(halves)


def _rejections(signal: float, seed: int) -> tuple[float, float]:
    """Share of replicates rejecting at 0.05: the plain Spearman test of the full-sample
    profiles (what ``official`` runs) and the cross-fitted one (the default)."""
    rng = np.random.default_rng(seed)
    plain, cross = [], []
    for _ in range(REPS):
        x, y = _draw(rng, signal)
        plain.append(stats.spearmanr(x.mean(0), y.mean(0)).pvalue < 0.05)
        z, se = cross_fit_spearman(
            x[0::2].mean(0), x[1::2].mean(0), y[0::2].mean(0), y[1::2].mean(0)
        )
        cross.append(2 * stats.norm.sf(abs(z) / se) < 0.05)
    return float(np.mean(plain)), float(np.mean(cross))


def test_shared_photos_make_the_plain_agreement_test_reject_a_true_null() -> None:
    plain, cross = _rejections(0.0, 1)
    # measured: plain 0.99 of 200 null replicates (>= 3x the level), cross-fitted 0.03 (the
    # CP upper bound of a true 0.05 at 200 replicates is ~0.09)
    assert plain >= 3 * 0.05, plain
    assert cross <= 0.10, cross


def test_cross_fitted_agreement_keeps_its_power() -> None:
    _, power = _rejections(0.5, 2)  # measured 0.96 (true profile sd 0.5, half noise ~0.3)
    assert power >= 0.8, power


def test_cross_fit_matches_scipy_on_the_halves() -> None:
    rng = np.random.default_rng(3)
    _, halves = _profiles(rng, 0.3)
    w = halves.pivot_table(index="item", columns=["model", "half"], values="effect")
    x0, x1, y0, y1 = (w[c].to_numpy() for c in [("a", 0), ("a", 1), ("b", 0), ("b", 1)])
    z, se = cross_fit_spearman(x0, x1, y0, y1)
    r1, r2 = stats.spearmanr(x0, y1).statistic, stats.spearmanr(x1, y0).statistic
    assert z == pytest.approx((np.arctanh(r1) + np.arctanh(r2)) / 2, rel=1e-12)
    r = np.clip(stats.spearmanr(x0, y0).statistic * stats.spearmanr(x1, y1).statistic, 0, 1)
    assert se == pytest.approx(1.06 / np.sqrt(ITEMS - 3) * np.sqrt((1 + r) / 2), rel=1e-12)
    full = halves.groupby(["model", "item"], as_index=False)["effect"].mean()
    row = profile_agreement(full, item="item", halves=halves).iloc[0]
    assert row["pval"] == pytest.approx(2 * stats.norm.sf(abs(z) / se), rel=1e-12)
    assert row["effect"] == pytest.approx(np.tanh(z), rel=1e-12)


def test_official_keeps_the_plain_tests() -> None:
    rng = np.random.default_rng(4)
    full, halves = _profiles(rng, 0.0)
    row = profile_agreement(full, item="item").iloc[0]
    ref = stats.spearmanr(full[full.model == "a"].effect, full[full.model == "b"].effect)
    assert row["pval"] == pytest.approx(ref.pvalue, rel=1e-9)
    per = full.rename(columns={"item": "scenario_id"})
    plain = model_pair_regressions(per).iloc[0]
    lr = stats.linregress(per[per.model == "a"].effect, per[per.model == "b"].effect)
    assert plain["pval"] == pytest.approx(lr.pvalue, rel=1e-9)
    cf = model_pair_regressions(per, halves=halves.rename(columns={"item": "scenario_id"}))
    assert cf.iloc[0]["intercept"] == plain["intercept"]  # the figure's line is kept
    assert cf.iloc[0]["pval"] != plain["pval"]


def test_face_t_interval_covers_small_cells() -> None:
    """Five faces per cell: the face bootstrap's percentile interval (official) covers the true
    SBS ~0.85, the face-level t-interval (default) ~0.95 (400 cells, 400 resamples; unequal rows
    per face, so the SBS is a ratio)."""
    rng = np.random.default_rng(5)
    n, cells, b = 5, 400, 400
    den = rng.integers(20, 40, size=(n, cells)).astype(float)
    num = rng.normal(size=(n, cells)) * den  # face means N(0, 1): the true SBS is 0
    lo, hi = percentile_ci(ratio_boot(num, den, face_weights(n, b, 1)), 0.95)
    tlo, thi = face_t_interval(num, den, 0.95)
    plain = np.mean((lo <= 0) & (hi >= 0))
    t_cov = np.mean((tlo <= 0) & (thi >= 0))
    assert plain <= 0.90, plain
    assert 0.92 <= t_cov <= 0.98, t_cov
    # the interval inverts the face-level t-test of the cell (Table 3's contrast_ttest)
    c = 7
    _est, p, _f = contrast_ttest(num[:, [c]], den[:, [c]], np.array([1.0]))
    lo95, hi95 = face_t_interval(num[:, [c]], den[:, [c]], 1 - p)
    assert min(abs(lo95[0]), abs(hi95[0])) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.SingularMatrixWarning")
def test_within_face_interaction_test_against_statsmodels() -> None:
    """Faces differ a lot (sd 1) and the interaction is small: the within-face F-test (face
    fixed effects) finds it, the pooled one (official) buries it under the face spread."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(6)
    faces, styles = 40, 4
    group = np.repeat(["g0", "g1"], faces // 2)
    face = rng.normal(size=faces)
    rows = []
    for f in range(faces):
        for s in range(styles):
            inter = 0.15 * (s == 0) * (group[f] == "g1")
            rows.append((f, f"s{s}", group[f], face[f] + inter + 0.1 * rng.normal()))
    df = pd.DataFrame(rows, columns=["face", "style", "group", "delta"])
    within = ols_interaction(df)
    pooled = ols_interaction(df, within_face=False)
    ref = anova_lm(
        smf.ols("delta ~ C(face) + C(style)", df).fit(),
        smf.ols("delta ~ C(face) + C(style) + C(style):C(group)", df).fit(),
    )
    assert within["pval"] == pytest.approx(ref["Pr(>F)"].iloc[1], rel=1e-6)
    plain = anova_lm(
        smf.ols("delta ~ C(style) + C(group)", df).fit(),
        smf.ols("delta ~ C(style) * C(group)", df).fit(),
    )
    assert pooled["pval"] == pytest.approx(plain["Pr(>F)"].iloc[1], rel=1e-6)
    assert within["pval"] < 0.01 < 0.5 < pooled["pval"]
