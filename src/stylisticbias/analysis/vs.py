"""Variation Strength (paper §4.4, Table 2) with a face bootstrap CI and a permutation test.

``VS_{m,d} = mean_s std_g( mean phi_{s,g,m} )`` on base faces: the mean phi of each demographic
group g of dimension d in scenario s, its standard deviation across the groups (``ddof`` 0 =
population, 1 = sample -- the paper does not say; config ``analysis.vs_ddof``), averaged over the
scenarios. Computed for all groups x scenarios at once from a (faces x scenarios) phi matrix.

Interval of the paper's VS (``range_low``/``range_high``): a face-bootstrap *range*
(bias-corrected percentile), not a confidence interval -- VS is biased upward by its noise floor
and the range is pinned to that biased estimate (under an all-null plant it covers the true VS in
0 of 168 cells). The confidence interval is the de-biased VS's (``debiased_ci_low/high``), whose
coverage the calibration measures (``reports/bench/calibration.json``, ``vs_debiased``).

Significance (the paper's Table 2 marks; the paper does not name the test): a face-label
permutation test -- the groups of dimension d are shuffled across the model's base faces
(each face keeps its whole scenario vector), VS is recomputed, and
``p = (1 + #{VS_perm >= VS_obs}) / (1 + n_permutations)``.

De-biased VS (beyond the paper, ``vs_debiased``; :mod:`stylisticbias.analysis.vs_debiased`): the
paper's VS is biased upward by a *noise floor* -- the group means carry sampling error (face-to-face
spread and response noise), which inflates their standard deviation, more so for dimensions with
more and smaller groups; with every effect zero it is about 0.02-0.03 in the demo. The one-way
ANOVA identity gives an unbiased, untruncated squared spread ``T`` (mean over scenarios of the
between-group sum of squares minus its expected noise, over ``K - ddof``), reported as the signed
root ``vs_debiased = sign(T) sqrt(|T|)``: the estimand is the root-mean-square over scenarios of the
true across-group SD (the paper's mean-of-SDs when the spread is the same in every scenario); it
scatters around 0 (either sign) when the groups do not differ. ``noise_floor`` is the VS that
sampling error alone produces. Interval: test-inversion face bootstrap (the sampling distribution
of ``T`` at each candidate spread, from resamples of data shifted to that spread), which covers
at the nominal rate at a true spread of 0 and near the floor, where a pivot bootstrap does not.

Boundary-aware interval (the default ``debiased_ci_low/high``; ``analysis.definitions: official``
keeps the signed test-inversion interval above): the spread cannot be negative, so 0 is in the
interval iff the face-label permutation test above does not reject at ``1 - ci`` (exact under
no spread: coverage ``ci`` at a true spread of 0), and a positive spread iff the test-inversion
bootstrap accepts it; ``[0, U]`` or ``[L, U]`` with ``L > 0``, on the VS scale (>= 0, so a
negative estimate can lie below it). The interval then agrees with the Table 2 mark at the level
``1 - ci``: it excludes 0 exactly when the uncorrected permutation p is below ``1 - ci``. Its
test inversion resamples faces within each group of the dimension (``stratified``: group sizes
fixed, as in the data; the ordinary face bootstrap let them vary and over-covered a planted spread
with 4 groups); ``official`` keeps the ordinary face bootstrap, which the paper VS's range uses.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd

from stylisticbias.analysis.bootstrap import (
    bc_percentile_ci,
    face_weights,
    stratified_face_weights,
)
from stylisticbias.analysis.metrics import face_codes, group_codes
from stylisticbias.analysis.permutations import face_permutations, permuted_group_sums
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import p_adjust
from stylisticbias.analysis.vs_debiased import (
    boundary_interval,
    debiased_interval,
    null_trace,
    vs_debiased,
)

log = logging.getLogger(__name__)

_D = AnalysisSettings  # the settings' defaults (conf/analysis/default.yaml mirrors them)


def _vs(sums: np.ndarray, cnt: np.ndarray, ddof: int) -> np.ndarray:
    """VS from group sums/counts of shape (..., K, S): mean over S of std over K."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(cnt > 0, sums / np.where(cnt > 0, cnt, 1), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(means, axis=-2, ddof=ddof)
        return np.nanmean(sd, axis=-1)


def variation_strength(
    scores: pd.DataFrame,
    dimensions: dict[str, str],
    *,
    ddof: int = 0,
    n_resamples: int = 1000,
    ci: float = _D.ci,
    seed: int = 0,
    n_permutations: int = 2000,
    method: str = "fdr_bh",
    boundary: bool = True,
    stratified: bool = True,
) -> pd.DataFrame:
    """VS per model x dimension on base faces.

    Parameters
    ----------
    scores : DataFrame
        Score rows; only ``is_base`` rows with a non-null ``phi`` are used.
    dimensions : dict
        Output dimension name -> demographic column (``{"body": "body_type", ...}``).
    ddof : int
        Delta degrees of freedom of the across-group standard deviation.
    n_resamples, ci, seed :
        Face-level bootstrap of VS (base faces resampled with replacement); bias-corrected
        percentile interval, since resampling inflates a spread of group means.
    n_permutations : int
        Face-label permutations for the p-value (0 skips the test).
    method : str
        Correction across all model x dimension cells.
    boundary : bool
        ``debiased_ci_low/high`` from the boundary-aware interval
        (:func:`~stylisticbias.analysis.vs_debiased.boundary_interval`: holds a true spread of 0
        at the nominal rate; needs ``n_permutations``); False: the signed test-inversion
        interval of :func:`~stylisticbias.analysis.vs_debiased.debiased_interval` (the
        ``official`` definitions keep it, so their tables stay as they were).
    stratified : bool
        The de-biased VS interval resamples faces within each group of the dimension
        (:func:`~stylisticbias.analysis.bootstrap.stratified_face_weights`: group sizes fixed,
        as in the data); False: the ordinary face bootstrap shared by every dimension (the
        ``official`` definitions keep it). The paper VS's range always uses the ordinary one.

    Returns
    -------
    DataFrame ``model, dimension, vs, range_low, range_high, pval, pval_corr, n, n_groups,
    n_scenarios, vs_debiased, debiased_ci_low, debiased_ci_high, noise_floor`` (``n`` = base
    faces; the de-biased VS and its noise floor as in the module docstring).

    Raises
    ------
    ValueError
        No base rows. (A dimension with fewer than two groups among the base faces gets a row
        of NaN -- VS is not estimable there -- and a warning saying why.)
    """
    base = scores[scores["is_base"].astype(bool) & scores["phi"].notna()]
    if base.empty:
        raise ValueError("variation_strength: no base-face rows with a valid phi")
    rows = []
    fell_back: list[str] = []
    for model, g in base.groupby("model", sort=True, observed=True):
        fc, faces = face_codes(g["face_id"])
        sc, skeys = group_codes(g, ["scenario_id"])
        F, S = len(faces), len(skeys)
        phi = np.zeros((F, S))
        mask = np.zeros((F, S))
        phi[fc, sc] = g["phi"].to_numpy(dtype=np.float64)
        mask[fc, sc] = 1.0
        phi2 = phi * phi
        all_s = set(scores["scenario_id"].unique())
        missing = sorted(int(x) for x in all_s - set(skeys["scenario_id"]))
        if missing:
            log.warning(
                "VS %s: no base-face phi for scenario(s) %s: averaged over the other %d",
                model,
                missing,
                S,
            )
        w = face_weights(F, n_resamples, seed) if n_resamples else None
        draws = face_permutations(seed + 1, F, n_permutations)
        for dim, col in dimensions.items():
            labels = np.full(F, -1, dtype=np.int64)
            lc, lkeys = group_codes(g, [col])
            labels[fc] = lc
            K = len(lkeys)
            if K < 2:  # VS (a spread of group means) is not estimable: a row of NaN
                log.warning(
                    "VS %s/%s: not estimable: %d group(s) (%s) among its base faces; VS needs "
                    ">= 2 (a larger or more balanced image set)",
                    model,
                    dim,
                    K,
                    ", ".join(map(str, lkeys[col])),
                )
                nan = np.nan
                rows.append((model, dim, nan, nan, nan, nan, F, K, S, nan, nan, nan, nan))
                continue
            onehot = np.eye(K)[labels]  # (F, K)
            obs = float(_vs(onehot.T @ phi, onehot.T @ mask, ddof))
            sums = (onehot.T @ phi, onehot.T @ phi2, onehot.T @ mask)
            db, floor = (float(x[()]) for x in vs_debiased(*sums, ddof))
            lo = hi = db_lo = db_hi = np.nan
            if w is not None:
                bs = np.einsum("bf,fk,fs->bks", w, onehot, phi, optimize=True)
                bc = np.einsum("bf,fk,fs->bks", w, onehot, mask, optimize=True)
                l_, h_, fb = bc_percentile_ci(_vs(bs, bc, ddof)[:, None], np.array([obs]), ci)
                lo, hi = float(l_[0]), float(h_[0])
                if fb[0]:
                    fell_back.append(f"{model}/{dim} (VS {obs:.4f})")
            p = np.nan
            if n_permutations:
                perm = draws.next()
                null = _vs(*permuted_group_sums(labels[perm], K, phi, mask), ddof)
                p = float((1 + np.sum(null >= obs - 1e-12)) / (1 + n_permutations))
            if w is not None:
                psi = null_trace(phi, mask, onehot, ddof)
                if stratified:
                    ws = stratified_face_weights(labels, n_resamples, seed + 2)
                    boot = tuple(
                        np.einsum("bf,fk,fs->bks", ws, onehot, x, optimize=True)
                        for x in (phi, phi2, mask)
                    )
                else:  # official: the ordinary face bootstrap (the paper VS range's resamples)
                    bs2 = np.einsum("bf,fk,fs->bks", w, onehot, phi2, optimize=True)
                    boot = (bs, bs2, bc)
                if boundary and np.isfinite(p):
                    db_lo, db_hi = boundary_interval(sums, boot, ddof, ci, psi, p)
                else:
                    db_lo, db_hi = debiased_interval(sums, boot, ddof, ci, psi)
            rows.append((model, dim, obs, lo, hi, p, F, K, S, db, db_lo, db_hi, floor))
    if fell_back:
        log.warning(
            "VS CI: %d cell(s) with the estimate outside its bootstrap distribution (VS near 0): "
            "plain percentile interval widened to include the estimate instead of the "
            "bias-corrected one: %s",
            len(fell_back),
            ", ".join(fell_back),
        )
    out = pd.DataFrame(
        rows,
        columns=[
            "model",
            "dimension",
            "vs",
            "range_low",
            "range_high",
            "pval",
            "n",
            "n_groups",
            "n_scenarios",
            "vs_debiased",
            "debiased_ci_low",
            "debiased_ci_high",
            "noise_floor",
        ],
    )
    out.insert(6, "pval_corr", p_adjust(out["pval"].to_numpy(), method))
    return out
