"""The de-biased VS interval's within-group face bootstrap: every resample keeps each group's size,
the default interval is the boundary-aware one computed on those resamples (checked against an
explicit pandas resampling of the faces), and the ``official`` definitions keep the ordinary
face bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from stylisticbias.analysis.bootstrap import face_weights, stratified_face_weights
from stylisticbias.analysis.vs import variation_strength
from stylisticbias.analysis.vs_debiased import boundary_interval, null_trace

SIZES = [14, 9, 5, 2]  # unequal groups, one of two faces


def _design(seed: int, effect: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    groups = rng.permutation(np.repeat(np.arange(len(SIZES)), SIZES))
    eff = effect * rng.choice([-1.0, 1.0], size=(len(SIZES), 8))
    u = rng.normal(0.0, 0.08, groups.size)
    phi = np.clip(0.5 + u[:, None] + eff[groups] + rng.normal(0, 0.1, (groups.size, 8)), 0, 1)
    return phi, groups


def _frame(phi: np.ndarray, groups: np.ndarray) -> pd.DataFrame:
    f, s = phi.shape
    return pd.DataFrame(
        {
            "model": "m",
            "is_base": True,
            "phi": phi.ravel(),
            "face_id": np.repeat([f"f{i:03d}" for i in range(f)], s),
            "scenario_id": np.tile(np.arange(1, s + 1), f),
            "grp": np.repeat([f"g{g}" for g in groups], s),
        }
    )


def test_every_resample_keeps_each_group_size() -> None:
    labels = np.random.default_rng(0).permutation(np.repeat([0, 1, 2, 3], SIZES))
    w = stratified_face_weights(labels, 500, seed=3)
    assert w.shape == (500, labels.size)
    for g, n in enumerate(SIZES):
        assert (w[:, labels == g].sum(axis=1) == n).all()
    # a resample within a group: each face drawn once on average, and not always once
    assert_allclose(w.mean(axis=0), 1.0, atol=0.15)
    assert w[:, labels == 0].std() > 0.5
    # the ordinary face bootstrap lets the sizes vary (what this resampling removes)
    ordinary = face_weights(labels.size, 500, seed=3)
    assert ordinary[:, labels == 0].sum(axis=1).std() > 1.0
    assert_allclose(stratified_face_weights(labels, 500, seed=3), w)  # deterministic


def _boot_by_pandas(frame: pd.DataFrame, w: np.ndarray, faces: list[str], keys: list[str]):
    """Group sums, sums of squares and counts per resample from explicitly repeated faces."""
    out = []
    for row in w.astype(int):
        reps = pd.DataFrame({"face_id": faces, "times": row})
        d = frame.merge(reps, on="face_id")
        d = d.loc[d.index.repeat(d["times"])].assign(phi2=lambda x: x["phi"] ** 2)
        agg = d.groupby(["grp", "scenario_id"]).agg(s1=("phi", "sum"), s2=("phi2", "sum"))
        agg["n"] = d.groupby(["grp", "scenario_id"]).size()
        out.append([agg[c].unstack("scenario_id").reindex(keys).fillna(0).to_numpy() for c in agg])
    return tuple(np.stack([o[i] for o in out]) for i in range(3))


@pytest.mark.parametrize(("seed", "effect"), [(1, 0.0), (2, 0.06)])
def test_default_interval_is_the_boundary_interval_on_within_group_resamples(
    seed: int, effect: float
) -> None:
    phi, groups = _design(seed, effect)
    frame = _frame(phi, groups)
    b = 60
    got = variation_strength(frame, {"d": "grp"}, n_resamples=b, seed=seed, n_permutations=199)
    got = got.iloc[0]
    faces = [f"f{i:03d}" for i in range(groups.size)]
    keys = [f"g{g}" for g in range(len(SIZES))]
    # the faces in the order variation_strength codes them (sorted ids) and their group codes
    labels = groups  # ids f000.. sort as the rows, group names g0.. as the codes
    w = stratified_face_weights(labels, b, seed + 2)
    boot = _boot_by_pandas(frame, w, faces, keys)
    onehot = np.eye(len(SIZES))[labels]
    obs = tuple(onehot.T @ x for x in (phi, phi * phi, np.ones_like(phi)))
    psi = null_trace(phi, np.ones_like(phi), onehot, 0)
    lo, hi = boundary_interval(obs, boot, 0, 0.95, psi, float(got["pval"]))
    assert_allclose([got["debiased_ci_low"], got["debiased_ci_high"]], [lo, hi], rtol=1e-9)
    assert 0.0 <= lo <= hi
    # the ordinary face bootstrap gives another interval (the test sees the resampling)
    plain = variation_strength(
        frame, {"d": "grp"}, n_resamples=b, seed=seed, n_permutations=199, stratified=False
    ).iloc[0]
    assert plain["debiased_ci_high"] != pytest.approx(hi, rel=1e-6)


def test_official_path_keeps_the_ordinary_bootstrap_and_the_signed_interval() -> None:
    """``boundary=False, stratified=False`` (what ``definitions: official`` passes) is the
    signed test inversion on the ordinary face resamples, whatever the default becomes."""
    phi, groups = _design(5, 0.03)
    frame = _frame(phi, groups)
    kw = {"n_resamples": 80, "seed": 5, "n_permutations": 99}
    off = variation_strength(frame, {"d": "grp"}, **kw, boundary=False, stratified=False)
    strat = variation_strength(frame, {"d": "grp"}, **kw, boundary=False)
    same = ["vs", "range_low", "range_high", "pval", "vs_debiased", "noise_floor"]
    pd.testing.assert_frame_equal(off[same], strat[same])  # only the de-biased interval moves
    assert off["debiased_ci_low"].iloc[0] <= off["vs_debiased"].iloc[0]
    assert off["debiased_ci_high"].iloc[0] != pytest.approx(strat["debiased_ci_high"].iloc[0])
