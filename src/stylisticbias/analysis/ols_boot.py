"""Face-bootstrap replicates of least-squares residual sums of squares, all resamples at once.

A face bootstrap reweights every row of face ``f`` by ``W[b, f]``, the number of times the face
was drawn in resample ``b`` (:func:`~stylisticbias.analysis.bootstrap.face_weights`). The
weighted least-squares fit of resample ``b`` only needs the weighted cross-products

    ``Z' diag(w_b) Z = sum_f W[b, f] Z_f' Z_f``,  ``Z = [X | y]``,

so the per-face cross-products ``Z_f' Z_f`` are formed once (one ``bincount`` per entry) and every
resample's are a single matrix product ``W @ G``. The residual sum of squares is then
``y'Wy - h' A^+ h`` (``A = X'WX``, ``h = X'Wy``, ``A^+`` the pseudo-inverse: a level that a
resample did not draw leaves a zero column, and the least-squares fit is still defined, as with
``numpy.linalg.lstsq``), from one batched symmetric eigendecomposition.

This replaces a loop of ``2 x n_resamples`` calls to ``lstsq`` on the (rows x columns) design
(the same resamples, the same statistic: equal to the loop to ~1e-10 relative, see
tests/analysis/test_ols_boot.py). ``y`` is centred first (every design here has an intercept,
which absorbs the shift and leaves the residuals unchanged), which keeps ``y'Wy`` close to the
residual sum and the subtraction accurate.
"""

from __future__ import annotations

import numpy as np


def face_cross_products(z: np.ndarray, row_face: np.ndarray, n_faces: int) -> np.ndarray:
    """Per-face ``Z_f' Z_f`` of the (rows x k) matrix ``z``, flattened: (faces, k * k)."""
    k = z.shape[1]
    out = np.zeros((n_faces, k, k))
    for i in range(k):
        for j in range(i, k):
            out[:, i, j] = np.bincount(row_face, weights=z[:, i] * z[:, j], minlength=n_faces)
            out[:, j, i] = out[:, i, j]
    return out.reshape(n_faces, k * k)


def _ssr(cross: np.ndarray, cols: np.ndarray, yi: int, n_rows: int) -> np.ndarray:
    """Residual sum of squares per resample from the weighted cross-products (B, k, k)."""
    a = cross[:, cols[:, None], cols[None, :]]
    h = cross[:, cols, yi]
    yy = cross[:, yi, yi]
    lam, vec = np.linalg.eigh(a)
    # rank cut-off of lstsq's rcond=None on the design (eps * max(n, p) on singular values),
    # on the squared scale of A = X'WX; a column a resample never drew is exactly 0 here
    top = lam.max(axis=1, keepdims=True)
    tol = np.maximum(top, 0.0) * max(n_rows, len(cols)) * np.finfo(np.float64).eps
    proj = np.einsum("bij,bi->bj", vec, h)
    with np.errstate(invalid="ignore", divide="ignore"):
        fitted = np.where(lam > tol, proj * proj / np.where(lam > tol, lam, 1.0), 0.0).sum(axis=1)
    return np.maximum(yy - fitted, 0.0)


def nested_ssr_boot(
    x_full: np.ndarray,
    full_cols: np.ndarray,
    red_cols: np.ndarray,
    y: np.ndarray,
    row_face: np.ndarray,
    weights: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Residual sums of squares of a full and a nested reduced fit, per face resample.

    ``x_full`` holds the columns of both designs (the full design = ``full_cols``, the reduced =
    ``red_cols``, both with the intercept); ``row_face`` each row's face position (the columns of
    ``weights``, (B, faces)). Returns ``(ssr_full, ssr_reduced, rows_drawn)``: ``rows_drawn[b]``
    is the number of rows with a positive weight in resample ``b`` (a fit with no more rows than
    columns is not usable).
    """
    y = np.asarray(y, dtype=np.float64)
    y = y - y.mean()  # the intercept absorbs it: residuals unchanged, y'Wy better conditioned
    z = np.hstack([np.asarray(x_full, dtype=np.float64), y[:, None]])
    n_faces = weights.shape[1]
    k = z.shape[1]
    cross = (weights @ face_cross_products(z, row_face, n_faces)).reshape(-1, k, k)
    rows = np.bincount(row_face, minlength=n_faces).astype(np.float64)
    drawn = (weights > 0).astype(np.float64) @ rows
    n = len(y)
    return (
        _ssr(cross, np.asarray(full_cols), k - 1, n),
        _ssr(cross, np.asarray(red_cols), k - 1, n),
        drawn,
    )
