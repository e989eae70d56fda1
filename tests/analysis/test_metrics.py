"""SBS, face-level effects and the bootstrap vs. plain pandas re-derivations."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci, ratio_boot
from stylisticbias.analysis.metrics import face_effects, group_codes, sbs


def test_sbs_equals_pandas_mean(synth: pd.DataFrame) -> None:
    d = synth[synth.delta.notna()]
    out = sbs(synth, ["model", "category"], n_resamples=0)
    ref = d.groupby(["model", "category"]).delta.agg(["mean", "size"]).reset_index()
    m = out.merge(ref, on=["model", "category"])
    assert len(m) == len(ref) == len(out)
    assert_allclose(m.effect, m["mean"], atol=1e-15)
    assert_allclose(m.abs_effect, m["mean"].abs(), atol=1e-15)
    assert (m.n == m["size"]).all()
    # face-level Wilcoxon on each face's mean delta in the cell
    cell = d[(d.model == "m1") & (d.category == "Fashion")]
    fm = cell.groupby("face_id").delta.mean().round(12)
    row = out[(out.model == "m1") & (out.category == "Fashion")].iloc[0]
    assert_allclose(row.pval, stats.wilcoxon(fm, method="asymptotic").pvalue)
    assert row.n_faces == fm.size


def test_sbs_overall_and_planted_effects(synth: pd.DataFrame) -> None:
    out = sbs(synth, ["category"], n_resamples=200).set_index("category")
    assert (
        out.loc["Fashion", "ci_low"] < 0.1 < out.loc["Fashion", "ci_high"]
        or abs(out.loc["Fashion", "effect"] - 0.1) < 0.01
    )
    assert out.loc["Fashion", "pval_corr"] < 0.001
    one = sbs(synth, [], n_resamples=0)
    assert_allclose(one.effect.iloc[0], synth.delta.mean())


def test_bootstrap_resamples_faces_not_rows() -> None:
    w = face_weights(5, 7, seed=3)
    assert w.shape == (7, 5) and (w.sum(axis=1) == 5).all()
    # ratio bootstrap == explicit resampling of faces
    rng = np.random.default_rng(3)
    draws = rng.integers(0, 5, size=(7, 5))
    num = np.arange(10.0).reshape(5, 2)
    den = np.ones((5, 2)) * [1, 2]
    rb = ratio_boot(num, den, w)
    explicit = np.array([num[d].sum(0) / den[d].sum(0) for d in draws])
    assert_allclose(rb, explicit)
    lo, _hi = percentile_ci(rb, 0.9)
    assert_allclose(lo, np.percentile(explicit, 5, axis=0))
    with pytest.raises(ValueError):
        face_weights(0, 10, 0)
    with pytest.raises(ValueError):
        percentile_ci(rb, 1.5)


def test_percentile_ci_all_nan_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        lo, _ = percentile_ci(np.full((10, 1), np.nan), 0.95)
    assert np.isnan(lo[0]) and "no finite replicate" in caplog.text


def test_face_effects_table7(synth: pd.DataFrame) -> None:
    d = synth[synth.delta.notna()]
    out = face_effects(synth, ["model"], n_resamples=100).set_index("model")
    fm = d[d.model == "m2"].groupby("face_id").delta.mean()
    assert_allclose(out.loc["m2", "sbs"], fm.mean())
    assert_allclose(out.loc["m2", "cohens_d"], fm.mean() / fm.std(ddof=1))
    x = d[d.model == "m2"].delta
    assert_allclose(out.loc["m2", "zero_rate"], (x.abs() <= 1e-9).mean())
    assert_allclose(out.loc["m2", "large_shift_rate"], (x.abs() >= 0.25 - 1e-12).mean())
    assert out.loc["m2", "d_ci_low"] < out.loc["m2", "cohens_d"] < out.loc["m2", "d_ci_high"]


def test_face_effects_single_face_is_nan_with_warning(
    synth: pd.DataFrame, caplog: pytest.LogCaptureFixture
) -> None:
    one = synth[synth.face_id == "f0000"]
    with caplog.at_level(logging.WARNING):
        out = face_effects(one, ["model"], n_resamples=0)
    assert out.cohens_d.isna().all() and "undefined" in caplog.text


def test_group_codes_and_errors(synth: pd.DataFrame) -> None:
    codes, keys = group_codes(synth, ["model", "gender"])
    assert len(keys) == 4 and codes.max() == 3
    with pytest.raises(ValueError, match="not in the table"):
        group_codes(synth, ["nope"])
    base_only = synth[synth.is_base]
    with pytest.raises(ValueError, match="no rows with a non-null 'delta'"):
        sbs(base_only, ["model"])


def test_sbs_nan_delta_rows_ignored(synth: pd.DataFrame) -> None:
    s = synth.copy()
    s.loc[s.index[s.delta.notna()][:100], "delta"] = np.nan
    out = sbs(s, ["model"], n_resamples=0)
    ref = s.groupby("model").delta.mean()
    assert_allclose(out.set_index("model").effect, ref, atol=1e-15)


@pytest.mark.parametrize("size", [7, 10_000_000])
def test_sorted_unique_equals_numpy(size: int) -> None:
    from stylisticbias.analysis.metrics import _sorted_unique

    flat = np.random.default_rng(1).integers(0, size, 500)
    uniq, inv = _sorted_unique(flat, size)
    u, i = np.unique(flat, return_inverse=True)
    assert np.array_equal(uniq, u) and np.array_equal(inv, i) and inv.dtype == np.int64
