"""Variation Strength (paper §4.4, Table 2) with a face bootstrap CI and a permutation test.

``VS_{m,d} = mean_s std_g( mean phi_{s,g,m} )`` on base faces: the mean phi of each demographic
group g of dimension d in scenario s, its standard deviation across the groups (``ddof`` 0 =
population, 1 = sample -- the paper does not say; config ``analysis.vs_ddof``), averaged over the
scenarios. Computed for all groups x scenarios at once from a (faces x scenarios) phi matrix.

Significance (the paper's Table 2 marks; the paper does not name the test): a face-label
permutation test -- the groups of dimension d are shuffled across the model's base faces
(each face keeps its whole scenario vector), VS is recomputed, and
``p = (1 + #{VS_perm >= VS_obs}) / (1 + n_permutations)``.

De-biased VS (beyond the paper, ``vs_debiased``): the paper's VS is biased upward by a *noise
floor* -- the group means carry sampling error (face-to-face spread and response noise), which
inflates their standard deviation, more so for dimensions with more and smaller groups; with every
effect zero it is about 0.02-0.03 in the demo. Per scenario ``s`` the one-way ANOVA identity

    E[ sum_g (m_g - mbar)^2 ] = sum_g (mu_g - mubar)^2 + (K-1)/K * sum_g sigma_g^2 / n_g

(``m_g`` group means of face-level phi, ``mu_g`` their population values, ``sigma_g^2`` the
within-group variance of face-level phi, estimated by ``s_g^2`` with ddof 1; a group with one face
uses the pooled within-group variance) gives an unbiased estimate of the squared spread of the
true group means, ``theta2_s = (sum_g (m_g - mbar)^2 - c_s) / (K - ddof)`` with
``c_s = (K-1)/K * sum_g s_g^2 / n_g``. It is averaged over scenarios and returned on the VS scale
as a signed root, ``vs_debiased = sign(T) sqrt(|T|)``, ``T = mean_s theta2_s``: the estimand is the
root-mean-square over scenarios of the true across-group SD (equal to the paper's mean-of-SDs
estimand when the spread is the same in every scenario). ``T`` is unbiased and can be negative
(0 = no demographic spread); the signed root keeps that symmetry, so under the null the estimate
scatters around 0 instead of sitting at the noise floor. ``noise_floor = sqrt(mean_s c_s /
(K - ddof))`` is the VS that sampling error alone produces. The interval is the face-bootstrap
*basic* (pivot) interval of ``T`` (every replicate de-biased with its own within-group variances,
pivoted on the plug-in spread: see :func:`_debiased_ci`), mapped to the VS scale by the signed
root. Measured coverage of the truth (``tests/analysis/test_vs_structure.py``, 200 simulated
replicates of 200 faces x 25 scenarios): 0.95-0.99 with 4 groups for a true spread of 0 to
0.045; with 2 groups (1 degree of freedom, a very skewed statistic) 0.85-0.92 at spreads near the
noise floor and >= 0.95 at 0 and well above it.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd

from stylisticbias.analysis.bootstrap import bc_percentile_ci, face_weights, percentile_ci
from stylisticbias.analysis.metrics import face_codes, group_codes
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import p_adjust

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


def _vs_debiased(
    s1: np.ndarray, s2: np.ndarray, cnt: np.ndarray, ddof: int
) -> tuple[np.ndarray, np.ndarray]:
    """De-biased VS and its noise floor from group sums, sums of squares and counts (..., K, S).

    See the module docstring for the formula. Returns ``(vs_debiased, noise_floor)`` with the
    leading shape; NaN where no scenario has two groups with phi.
    """
    ok = cnt > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(ok, cnt, 1.0)
        means = np.where(ok, s1 / safe, np.nan)
        ssw = np.where(ok, s2 - s1 * s1 / safe, 0.0).clip(min=0.0)  # within-group sum of squares
        dfw = np.where(cnt > 1, cnt - 1.0, 0.0)
        pooled = ssw.sum(axis=-2, keepdims=True) / dfw.sum(axis=-2, keepdims=True)
        var_g = np.where(cnt > 1, ssw / np.where(cnt > 1, cnt - 1.0, 1.0), pooled)
        k = ok.sum(axis=-2)  # groups with phi, per scenario
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mbar = np.nanmean(means, axis=-2, keepdims=True)
        between = np.where(ok, (means - mbar) ** 2, 0.0).sum(axis=-2)
        c = (k - 1) / np.where(k > 0, k, 1) * np.where(ok, var_g / safe, 0.0).sum(axis=-2)
        usable = (k >= 2) & np.isfinite(c)
        denom = np.where(usable, k - ddof, 1.0)
        theta2 = np.where(usable, (between - c) / denom, np.nan)
        floor2 = np.where(usable, c / denom, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t = np.nanmean(theta2, axis=-1)
        floor = np.sqrt(np.nanmean(floor2, axis=-1))
    return np.sign(t) * np.sqrt(np.abs(t)), floor


def _debiased_ci(db: float, floor: float, boot: np.ndarray, ci: float) -> tuple[float, float]:
    """Basic-bootstrap interval of the de-biased VS, pivoted on the variance scale.

    In the bootstrap world the "true" squared spread is the *plug-in* one of the sample,
    ``P = T + noise_floor^2`` (resampling treats the observed group means as the truth), so
    ``T* - P`` mimics ``T - theta^2`` and the interval for ``theta^2`` is
    ``[T - (q_hi(T*) - P), T - (q_lo(T*) - P)]``, mapped back by the signed root. (A percentile
    interval of ``T*`` would be centred on ``P``, i.e. carry the noise floor again.)
    """
    if not (np.isfinite(db) and np.isfinite(floor)):
        return np.nan, np.nan
    t = np.sign(db) * db * db
    tb = np.sign(boot) * boot * boot
    lo, hi = percentile_ci(tb[:, None], ci)
    plug = t + floor * floor
    a, b = t + plug - hi[0], t + plug - lo[0]
    a, b = min(a, t), max(b, t)
    return float(np.sign(a) * np.sqrt(abs(a))), float(np.sign(b) * np.sqrt(abs(b)))


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

    Returns
    -------
    DataFrame ``model, dimension, vs, ci_low, ci_high, pval, pval_corr, n, n_groups,
    n_scenarios, vs_debiased, debiased_ci_low, debiased_ci_high, noise_floor`` (``n`` = base
    faces; the de-biased VS and its noise floor as in the module docstring).

    Raises
    ------
    ValueError
        No base rows, or a dimension with fewer than two groups (VS undefined).
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
        rng = np.random.default_rng(seed + 1)
        for dim, col in dimensions.items():
            labels = np.full(F, -1, dtype=np.int64)
            lc, lkeys = group_codes(g, [col])
            labels[fc] = lc
            K = len(lkeys)
            if K < 2:
                raise ValueError(
                    f"variation_strength: model {model!r} dimension {dim!r} has {K} group(s) "
                    f"({', '.join(map(str, lkeys[col]))}) among its base faces; VS needs >= 2"
                )
            onehot = np.eye(K)[labels]  # (F, K)
            obs = float(_vs(onehot.T @ phi, onehot.T @ mask, ddof))
            db, floor = (
                float(x[()])
                for x in _vs_debiased(onehot.T @ phi, onehot.T @ phi2, onehot.T @ mask, ddof)
            )
            lo = hi = db_lo = db_hi = np.nan
            if w is not None:
                bs = np.einsum("bf,fk,fs->bks", w, onehot, phi, optimize=True)
                bs2 = np.einsum("bf,fk,fs->bks", w, onehot, phi2, optimize=True)
                bc = np.einsum("bf,fk,fs->bks", w, onehot, mask, optimize=True)
                l_, h_, fb = bc_percentile_ci(_vs(bs, bc, ddof)[:, None], np.array([obs]), ci)
                lo, hi = float(l_[0]), float(h_[0])
                if fb[0]:
                    fell_back.append(f"{model}/{dim} (VS {obs:.4f})")
                db_lo, db_hi = _debiased_ci(db, floor, _vs_debiased(bs, bs2, bc, ddof)[0], ci)
            p = np.nan
            if n_permutations:
                perm = np.argsort(rng.random((n_permutations, F)), axis=1)
                ph = np.eye(K)[labels[perm]]  # (P, F, K)
                ps = np.einsum("pfk,fs->pks", ph, phi, optimize=True)
                pc = np.einsum("pfk,fs->pks", ph, mask, optimize=True)
                null = _vs(ps, pc, ddof)
                p = float((1 + np.sum(null >= obs - 1e-12)) / (1 + n_permutations))
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
            "ci_low",
            "ci_high",
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
