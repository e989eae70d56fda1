"""Shared face permutations and the one-product permuted group sums equal the direct ones."""

from __future__ import annotations

import numpy as np
import pytest

from stylisticbias.analysis.permutations import face_permutations, permuted_group_sums


def test_draws_are_the_generators_sequence_and_shared() -> None:
    rng = np.random.default_rng(11)
    expected = [np.argsort(rng.random((50, 30)), axis=1) for _ in range(3)]
    first = face_permutations(11, 30, 50)
    got = [first.next() for _ in range(3)]
    for e, g in zip(expected, got, strict=True):
        assert np.array_equal(e, g)
    again = face_permutations(11, 30, 50)  # a second model: the same arrays, not redrawn
    assert again.next() is got[0] and again.next() is got[1]
    with pytest.raises(ValueError):
        got[0][0, 0] = 1  # read-only: a model cannot alter another's permutations
    other = face_permutations(12, 30, 50).next()
    assert not np.array_equal(other, got[0])


@pytest.mark.parametrize("holes", [False, True])
def test_permuted_group_sums_equal_einsum(holes: bool) -> None:
    rng = np.random.default_rng(0)
    f, s, k, p = 40, 6, 4, 25
    phi = rng.random((f, s))
    mask = (rng.random((f, s)) > 0.2).astype(float) if holes else np.ones((f, s))
    phi = phi * mask
    labels = rng.integers(-1, k, f)  # -1: no label, the last group (as np.eye(k)[-1])
    perm = np.argsort(rng.random((p, f)), axis=1)
    onehot = np.eye(k)[labels[perm]]
    sums, counts = permuted_group_sums(labels[perm], k, phi, mask)
    np.testing.assert_allclose(sums, np.einsum("pfk,fs->pks", onehot, phi), rtol=1e-13)
    assert np.array_equal(counts, np.einsum("pfk,fs->pks", onehot, mask))
