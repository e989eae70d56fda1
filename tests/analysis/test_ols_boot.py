"""The all-resamples-at-once weighted least squares equals the per-resample loop it replaced."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci
from stylisticbias.analysis.official_analyses.effects import _dummies, _eta_row, _ols_ssr
from stylisticbias.analysis.ols_boot import face_cross_products, nested_ssr_boot


def _design(seed: int, n_faces: int = 30, rare: bool = False):
    """Faces x two categorical factors, a few rows per face; ``rare``: one level on one face."""
    rng = np.random.default_rng(seed)
    face, a, b = [], [], []
    for f in range(n_faces):
        for _ in range(rng.integers(2, 5)):
            face.append(f)
            a.append("rare" if rare and f == 3 else ["a1", "a2", "a3"][rng.integers(0, 3)])
            b.append(["b1", "b2"][rng.integers(0, 2)])
    face, a, b = np.array(face), np.array(a, dtype=object), np.array(b, dtype=object)
    y = 5.0 + 0.3 * (a == "a2") - 0.2 * (b == "b2") + rng.normal(0, 1, len(face))
    y += rng.normal(0, 0.5, n_faces)[face]  # a face effect: rows of a face are correlated
    one = np.ones((len(y), 1))
    da, db = _dummies(a), _dummies(b)
    full = np.hstack([one, da, db])
    red = np.r_[0, np.arange(1 + da.shape[1], full.shape[1])]  # without factor a
    return full, red, y, face


def _loop(full, red, y, face, w_faces):
    """The per-resample lstsq loop (the former implementation), as the reference."""
    sf = np.full(len(w_faces), np.nan)
    sr = np.full(len(w_faces), np.nan)
    drawn = np.zeros(len(w_faces))
    for b, wf in enumerate(w_faces):
        w = wf[face]
        drawn[b] = (w > 0).sum()
        sf[b], _ = _ols_ssr(full, y, w)
        sr[b], _ = _ols_ssr(full[:, red], y, w)
    return sf, sr, drawn


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rare", [False, True])
def test_nested_ssr_boot_equals_the_lstsq_loop(seed: int, rare: bool) -> None:
    full, red, y, face = _design(seed, rare=rare)
    w = face_weights(30, 200, seed)
    got = nested_ssr_boot(full, np.arange(full.shape[1]), red, y, face, w)
    want = _loop(full, red, y, face, w)
    if rare:  # resamples that never drew face 3 lose the "rare" level: a zero column
        assert (w[:, 3] == 0).any()
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9 * float(np.sum(y * y)))


def test_nested_ssr_boot_matches_statsmodels_wls() -> None:
    full, red, y, face = _design(5)
    w = face_weights(30, 3, 7)
    sf, sr, _ = nested_ssr_boot(full, np.arange(full.shape[1]), red, y, face, w)
    for b in range(3):
        keep = w[b][face] > 0
        fit_f = sm.WLS(y[keep], full[keep], weights=w[b][face][keep]).fit()
        fit_r = sm.WLS(y[keep], full[keep][:, red], weights=w[b][face][keep]).fit()
        assert sf[b] == pytest.approx(fit_f.ssr, rel=1e-9)
        assert sr[b] == pytest.approx(fit_r.ssr, rel=1e-9)


def test_face_cross_products_sum_to_the_design_cross_product() -> None:
    full, _, y, face = _design(3)
    z = np.hstack([full, y[:, None]])
    g = face_cross_products(z, face, 30).reshape(30, z.shape[1], z.shape[1])
    np.testing.assert_allclose(g.sum(axis=0), z.T @ z, rtol=1e-12)
    np.testing.assert_allclose(g[4], z[face == 4].T @ z[face == 4], rtol=1e-12)


@pytest.mark.parametrize("rare", [False, True])
def test_eta_row_interval_equals_the_loop(rare: bool) -> None:
    """The effect-size row (estimate, F, p, bootstrap CI) is the loop version's, same draws."""
    full, red, y, face = _design(11, rare=rare)
    w = face_weights(30, 300, 0)
    row = _eta_row("a", "mixed", red, full, y, face, w, 0.95)
    sf, sr, drawn = _loop(full, red, y, face, w)
    boot = np.full(len(w), np.nan)
    for b in range(len(w)):
        if drawn[b] > full.shape[1] and sr[b] > 0:
            ss = max(sr[b] - sf[b], 0.0)
            boot[b] = ss / (ss + sf[b])
    lo, hi = percentile_ci(boot[:, None], 0.95)
    assert row["ci_low"] == pytest.approx(float(lo[0]), rel=1e-9)
    assert row["ci_high"] == pytest.approx(float(hi[0]), rel=1e-9)
    ols_f = sm.OLS(y, full).fit()
    ols_r = sm.OLS(y, full[:, red]).fit()
    df_num = ols_r.df_resid - ols_f.df_resid
    f = ((ols_r.ssr - ols_f.ssr) / df_num) / (ols_f.ssr / ols_f.df_resid)
    assert row["statistic"] == pytest.approx(f, rel=1e-9)
    assert row["partial_eta2"] == pytest.approx(
        (ols_r.ssr - ols_f.ssr) / (ols_r.ssr - ols_f.ssr + ols_f.ssr), rel=1e-9
    )
    assert pd.notna(row["pval"])
