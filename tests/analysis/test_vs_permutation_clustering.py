"""The VS permutation test (Table 2's marks) permutes whole faces: with a strong per-person effect
shared by a face's scenarios and no group effect it holds its level, where a test that shuffles
the labels within each scenario (ignoring that a face's answers are clustered) over-rejects."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stylisticbias.analysis.vs import variation_strength

FACES, SCENARIOS, REPLICATES, ALPHA = 40, 20, 60, 0.05


def _null_frame(seed: int) -> pd.DataFrame:
    """No group effect; a person effect (sd 0.2 on phi) common to the face's scenarios."""
    rng = np.random.default_rng(seed)
    g = rng.permutation(np.repeat([0, 1, 2], [20, 12, 8]))
    u = rng.normal(0.0, 0.2, FACES)
    phi = np.clip(0.5 + u[:, None] + rng.normal(0.0, 0.05, (FACES, SCENARIOS)), 0.0, 1.0)
    f = np.repeat(np.arange(FACES), SCENARIOS)
    return pd.DataFrame(
        {
            "model": "m",
            "face_id": [f"F{i:03d}" for i in f],
            "scenario_id": np.tile(np.arange(1, SCENARIOS + 1), FACES),
            "is_base": True,
            "phi": phi.ravel(),
            "grp": g[f].astype(str),
        }
    )


def null_rejection_rate() -> float:
    """Share of null replicates whose VS permutation p is below ``ALPHA``."""
    p = [
        variation_strength(
            _null_frame(r), {"d": "grp"}, n_resamples=0, seed=r, n_permutations=99
        ).iloc[0]["pval"]
        for r in range(REPLICATES)
    ]
    return float(np.mean(np.asarray(p) < ALPHA))


def test_vs_permutation_holds_its_level_under_a_person_effect() -> None:
    # Binomial(60, 0.05): P(rate > 0.15) < 0.003; shuffling within scenarios gives ~0.3
    assert null_rejection_rate() <= 0.15


@pytest.mark.slow
def test_a_within_scenario_shuffle_would_fail(monkeypatch) -> None:
    """The check above can fail: the wrong (row-level) permutation over-rejects on the same data."""
    import stylisticbias.analysis.vs as vs_mod

    rng = np.random.default_rng(0)

    def rowwise(labels, k, x, mask):
        p, f = labels.shape
        idx = rng.random((p, f, x.shape[1])).argsort(axis=1)
        xs = np.take_along_axis(np.broadcast_to(x, (p, *x.shape)), idx, axis=1)
        onehot = (labels[:, None, :] == np.arange(k)[None, :, None]).astype(np.float64)
        sums = np.einsum("pkf,pfs->pks", onehot, xs)
        sizes = np.bincount(labels[0], minlength=k).astype(np.float64)
        return sums, np.broadcast_to(sizes[None, :, None], sums.shape)

    monkeypatch.setattr(vs_mod, "permuted_group_sums", rowwise)
    assert null_rejection_rate() > 0.15
