"""Face-level bootstrap: resample *faces* (the independent units), never rows.

Every SBS-type statistic in this package is a ratio of face-level sums,
``sum_f num[f, c] / sum_f den[f, c]`` (num = summed delta of face ``f`` in cell ``c``, den = its
row count). Resampling faces with replacement multiplies each face's sums by the number of times
it was drawn, so one bootstrap replicate of *all* cells at once is a matrix product
``W @ num / W @ den`` with ``W`` the (resamples x faces) matrix of draw counts. The same ``W``
(one seed) is used for every table, so CIs of different groupings come from the same resamples.

Example::

    W = face_weights(n_faces=500, n_resamples=1000, seed=0)
    boot = ratio_boot(num, den, W)           # (1000, n_cells)
    lo, hi = percentile_ci(boot, ci=0.95)
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

log = logging.getLogger(__name__)


def face_weights(n_faces: int, n_resamples: int, seed: int) -> np.ndarray:
    """Draw counts of a nonparametric bootstrap over ``n_faces`` faces, shape (B, n_faces).

    Row ``b`` says how often each face appears in resample ``b`` (multinomial with equal
    probabilities, ``n_faces`` draws). Deterministic given ``seed``.
    """
    if n_faces < 1:
        raise ValueError(f"bootstrap needs at least one face; got n_faces={n_faces}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1; got {n_resamples}")
    return _draw_counts(np.random.default_rng(seed), n_faces, n_resamples)


def _draw_counts(rng: np.random.Generator, n: int, n_resamples: int) -> np.ndarray:
    """(B, n) draw counts of ``n`` draws with replacement from ``n`` units per resample."""
    draws = rng.integers(0, n, size=(n_resamples, n))
    flat = (np.arange(n_resamples)[:, None] * n + draws).ravel()
    w = np.bincount(flat, minlength=n_resamples * n).reshape(n_resamples, n)
    return w.astype(np.float64)


def stratified_face_weights(labels: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Draw counts of a face bootstrap *within* each group, shape (B, n_faces).

    Each stratum (a distinct value of ``labels``, the faces' demographic group) of ``n_g`` faces
    is resampled with replacement ``n_g`` times, so every resample keeps every group's size
    exactly; an ordinary face bootstrap (:func:`face_weights`) lets the sizes vary, which adds a
    spread of the group means' precision to the resamples that the data, whose group sizes are
    fixed, do not have. Deterministic given ``seed``.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size < 1:
        raise ValueError(f"stratified bootstrap needs a 1-d array of labels; got {labels.shape}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1; got {n_resamples}")
    rng = np.random.default_rng(seed)
    w = np.zeros((n_resamples, labels.size))
    for g in np.unique(labels):
        idx = np.flatnonzero(labels == g)
        w[:, idx] = _draw_counts(rng, idx.size, n_resamples)
    return w


def ratio_boot(num: np.ndarray, den: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Bootstrap replicates of ``num.sum(0) / den.sum(0)`` per column: (B, cells).

    A replicate in which a cell has no rows (all its faces undrawn) is NaN.
    """
    top = weights @ num
    bottom = weights @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


def percentile_ci(boot: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of ``boot`` (NaN replicates ignored).

    Columns with no finite replicate get NaN bounds; a warning says how many.
    """
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be in (0, 1); got {ci}")
    boot = np.atleast_2d(boot)
    tail = (1.0 - ci) / 2.0 * 100.0
    finite = np.isfinite(boot).any(axis=0)
    lo = np.full(boot.shape[1], np.nan)
    hi = np.full(boot.shape[1], np.nan)
    if finite.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            q = np.nanpercentile(boot[:, finite], [tail, 100.0 - tail], axis=0)
        lo[finite], hi[finite] = q[0], q[1]
    if (~finite).any():
        log.warning(
            "bootstrap: %d cell(s) have no finite replicate; their CI is NaN", (~finite).sum()
        )
    return lo, hi


def bc_percentile_ci(
    boot: np.ndarray, observed: np.ndarray, ci: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bias-corrected percentile interval (Efron 1981) per column of ``boot``.

    For statistics whose bootstrap distribution is shifted against the estimate -- VS, a standard
    deviation of group means, is inflated by resampling noise -- the plain percentile interval
    can miss the estimate itself. With ``z0 = Phi^-1(share of replicates < observed)`` the
    bounds are the ``Phi(2 z0 +- z_{(1+ci)/2})`` quantiles.

    When the estimate lies far in a tail of the bootstrap distribution -- every replicate above
    it (VS near 0, where resampling can only add spread), or a share of replicates below it
    under ``(1 - ci) / 2`` -- ``2 z0 +- z`` puts *both* bias-corrected quantiles on the same side
    of the estimate, and the interval excludes its own estimate (e.g. ``[0.01962, 0.01963]``
    around a VS of 0.0201). Any column whose bias-corrected interval does not contain the
    estimate (this includes ``z0`` unbounded) falls back to the plain percentile interval
    widened to include the estimate: ``[min(q_lo, obs), max(q_hi, obs)]``. The returned
    interval therefore always contains the estimate.

    Returns ``(lo, hi, fallback)``; ``fallback`` flags the columns that took the fallback.
    """
    from scipy.stats import norm

    boot = np.atleast_2d(boot)
    obs = np.broadcast_to(np.asarray(observed, dtype=np.float64), (boot.shape[1],))
    lo = np.full(boot.shape[1], np.nan)
    hi = np.full(boot.shape[1], np.nan)
    fallback = np.zeros(boot.shape[1], dtype=bool)
    zc = norm.ppf(0.5 + ci / 2.0)
    tail = (1.0 - ci) / 2.0 * 100.0
    for c in range(boot.shape[1]):
        b = boot[:, c][np.isfinite(boot[:, c])]
        if b.size == 0 or not np.isfinite(obs[c]):
            continue
        below, above = np.sum(b < obs[c]), np.sum(b > obs[c])
        if below == 0 or above == 0:  # estimate outside the replicates: BC degenerates
            q_lo, q_hi = np.percentile(b, [tail, 100.0 - tail])
            lo[c], hi[c] = min(q_lo, obs[c]), max(q_hi, obs[c])
            fallback[c] = True
            continue
        share = (below + 0.5 * np.sum(b == obs[c])) / b.size
        z0 = norm.ppf(share)
        qs = norm.cdf([2 * z0 - zc, 2 * z0 + zc]) * 100.0
        lo[c], hi[c] = np.percentile(b, qs)
        if not lo[c] <= obs[c] <= hi[c]:  # BC quantiles both on one side of the estimate
            q_lo, q_hi = np.percentile(b, [tail, 100.0 - tail])
            lo[c], hi[c] = min(q_lo, obs[c]), max(q_hi, obs[c])
            fallback[c] = True
    return lo, hi, fallback
