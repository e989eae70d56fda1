"""Face-label permutations shared across models, and group sums under many permutations at once.

The VS permutation test (:mod:`stylisticbias.analysis.vs`) draws, per model, ``n_permutations``
random orderings of the model's ``F`` base faces from ``default_rng(seed + 1)``, one set per
dimension in turn. The draws depend only on ``(seed, F, n_permutations)`` and their position in
that sequence -- not on the model's phi or labels -- so every model with the same number of base
faces uses the same permutations. :func:`face_permutations` draws each set once per process and
hands the same (read-only) array to later models: the permutations, and hence the p-values, are
exactly those of drawing them afresh for each model.
"""

from __future__ import annotations

import numpy as np

#: (seed, faces, permutations) -> the sets drawn so far and the generator that drew them
_DRAWN: dict[tuple[int, int, int], tuple[list[np.ndarray], np.random.Generator]] = {}


class PermutationDraws:
    """The sequence of permutation sets of ``default_rng(seed)``: ``next()`` returns the next
    ``(n_permutations, faces)`` array of ``argsort(rng.random((n_permutations, faces)))``."""

    def __init__(self, seed: int, faces: int, n_permutations: int) -> None:
        key = (int(seed), int(faces), int(n_permutations))
        if key not in _DRAWN:
            _DRAWN.clear()  # one design at a time: a few arrays of n_permutations x faces
            _DRAWN[key] = ([], np.random.default_rng(seed))
        self._sets, self._rng = _DRAWN[key]
        self._shape = (int(n_permutations), int(faces))
        self._i = 0

    def next(self) -> np.ndarray:
        """The next set of permutations (rows: permutations of ``range(faces)``), read-only."""
        while len(self._sets) <= self._i:
            perm = np.argsort(self._rng.random(self._shape), axis=1)
            perm.setflags(write=False)
            self._sets.append(perm)
        self._i += 1
        return self._sets[self._i - 1]


def face_permutations(seed: int, faces: int, n_permutations: int) -> PermutationDraws:
    """The permutation sets ``default_rng(seed)`` draws for ``faces`` faces, in order, drawn
    once per process (see the module docstring)."""
    return PermutationDraws(seed, faces, n_permutations)


def permuted_group_sums(
    labels: np.ndarray, k: int, x: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Group sums of ``x`` and ``mask`` (F, S) under each row of permuted labels ``labels``
    (P, F; values in ``range(k)``, ``-1`` counting as the last group, as ``np.eye(k)[labels]``
    has it): arrays (P, k, S), one matrix product for all permutations.

    Where ``mask`` is all ones the counts are each group's size (a permutation keeps it)."""
    p, f = labels.shape
    labels = np.where(labels < 0, labels + k, labels)  # -1 (no label) indexes the last group
    onehot = (labels[:, None, :] == np.arange(k)[None, :, None]).astype(np.float64)
    onehot = onehot.reshape(p * k, f)
    if np.all(mask == 1.0):
        sums = (onehot @ x).reshape(p, k, x.shape[1])
        sizes = np.bincount(labels[0], minlength=k).astype(np.float64)
        counts = np.broadcast_to(sizes[None, :, None], sums.shape)
        return sums, counts
    both = (onehot @ np.concatenate([x, mask], axis=1)).reshape(p, k, 2 * x.shape[1])
    return both[..., : x.shape[1]], both[..., x.shape[1] :]
