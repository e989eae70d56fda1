"""The variation bias of each scenario (base vs variation images; Tables 10-16) and the halo rate
over the tagged scenarios, each with face-bootstrap CIs.

The unit of the variation test is the **person** (default): a Wilcoxon signed-rank test of the
within-person differences phi(variation) - phi(base), one per person, so a person's two images
are compared with each other. ``paper_tests=True`` (``analysis.definitions: official``) runs the
paper's test instead: Kruskal-Wallis of the base images against the variation images as two
independent samples (unit ``image``), which reproduces the paper's numbers and, when a person's
two images are alike, rejects far less often than its level (and detects less). ``h`` is the
paper's Kruskal-Wallis H under both (the paper's statistic, shown beside the paper's H).

The intervals of the means and of the shift are Student-t intervals over persons (the shift's
from the within-person differences); ``paper_tests`` keeps the face-bootstrap percentile
intervals of before, which cover less than their level with few people.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci
from stylisticbias.benchmark import Benchmark
from stylisticbias.benchmark.sections import StatisticsSpec
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.paired_variation.analysis.counts import (
    DERIVED_DECIMALS,
    Bootstrap,
    PairedData,
    gap_ci,
    group_means,
    kruskal_counts,
    signed_rank_counts,
    t_halfwidth,
)

#: The ``test`` and ``unit`` columns of the variation test: (test, unit) by ``paper_tests``.
VARIATION_TEST = {
    False: ("wilcoxon_signed_rank_person_differences", "person"),
    True: ("kruskal_wallis_pooled_images (paper)", "image"),
}


def difference_counts(data: PairedData) -> tuple[np.ndarray, np.ndarray]:
    """Per person the one-hot of its difference phi(variation) - phi(base) per scenario:
    ``(F, S, K)`` (a zero row where either image lacks a valid phi) and the ``K`` distinct
    differences (what :func:`~.counts.signed_rank_counts` and the face bootstrap take)."""
    d = np.round(data.person_differences(), DERIVED_DECIMALS)
    ok = ~np.isnan(d)
    diffs, k_ix = np.unique(d[ok], return_inverse=True)
    onehot = np.zeros((*d.shape, len(diffs)))
    f_ix, s_ix = np.nonzero(ok)
    onehot[f_ix, s_ix, k_ix] = 1.0
    return onehot, diffs


def _direction(mean_base: np.ndarray, mean_var: np.ndarray, spec: StatisticsSpec) -> list[str]:
    assert spec.variation is not None
    out = []
    for b, v in zip(mean_base, mean_var, strict=True):
        if np.isnan(b) or np.isnan(v) or b == v:
            out.append("tie")
        else:
            out.append(spec.variation.label if v > b else spec.variation.base_label)
    return out


def variation_bias(
    data: PairedData,
    benchmark: Benchmark,
    spec: StatisticsSpec,
    boot: Bootstrap,
    paper_tests: bool = False,
) -> pd.DataFrame:
    """Per scenario: the variation test (signed-rank of the within-person differences;
    ``paper_tests``: KW of phi(base) vs phi(variation) images), the paper's KW H, the two means
    and their difference (``shift`` = variation - base) with bootstrap CIs, significance at
    ``spec.alpha`` and the direction (Tables 10-16)."""
    counts = data.weighted(None)  # (S, 2, U)
    h, p, _ = kruskal_counts(counts)
    test_name, unit = VARIATION_TEST[paper_tests]
    if not paper_tests:
        onehot, diffs = difference_counts(data)
        _, p = signed_rank_counts(onehot.sum(axis=0), diffs)
    means = group_means(counts, data.values)  # (S, 2)
    if paper_tests:  # face-bootstrap percentile intervals (the numbers before person units)
        w = face_weights(len(data.faces), boot.n_resamples, boot.seed)
        boot_counts = data.weighted(w)
        bm = group_means(boot_counts, data.values)  # (B, S, 2)
        lo, hi = percentile_ci(bm.reshape(bm.shape[0], -1), boot.ci)
        lo, hi = lo.reshape(means.shape), hi.reshape(means.shape)
        shift, shift_lo, shift_hi = gap_ci(counts, boot_counts, data.values, boot.ci)
    else:  # Student-t intervals over persons (one value per person)
        phi = data.person_phi()  # (F, S, 2)
        one = np.zeros(len(data.faces), dtype=int)
        hw = np.concatenate([t_halfwidth(phi[..., v], one, 1, boot.ci) for v in (0, 1)], axis=1)
        lo, hi = means - hw, means + hw
        shift = means[:, 1] - means[:, 0]
        hw_shift = t_halfwidth(data.person_differences(), one, 1, boot.ci)[:, 0]
        shift_lo, shift_hi = shift - hw_shift, shift + hw_shift
    n = counts.sum(axis=-1)
    scen = [benchmark.scenario(i) for i in data.scenario_ids]
    return pd.DataFrame(
        {
            "scenario_id": list(data.scenario_ids),
            "scenario_category": [s.category for s in scen],
            "subcategory": [s.subcategory for s in scen],
            "positive": [s.positive for s in scen],
            "negative": [s.negative for s in scen],
            "halo": [bool(spec.halo_tag) and spec.halo_tag in s.tags for s in scen],
            "test": test_name,
            "unit": unit,
            "n_base": n[:, 0],
            "n_variation": n[:, 1],
            "mean_base": means[:, 0],
            "mean_base_low": lo[:, 0],
            "mean_base_high": hi[:, 0],
            "mean_variation": means[:, 1],
            "mean_variation_low": lo[:, 1],
            "mean_variation_high": hi[:, 1],
            "shift": shift,
            "shift_low": shift_lo,
            "shift_high": shift_hi,
            "h": h,
            "pval": p,
            "significant_alpha": np.nan_to_num(p, nan=1.0) < spec.alpha,
            "direction": _direction(means[:, 0], means[:, 1], spec),
        }
    )


def _halo_counts(
    counts: np.ndarray,
    values: np.ndarray,
    alpha: float,
    diff: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Significant and significant-towards-the-variation flags from ``(..., S, 2, U)``; with
    ``diff`` (difference counts ``(..., S, K)`` and the differences) the significance is the
    signed-rank test's, else the paper's pooled KW."""
    if diff is None:
        _, p, _ = kruskal_counts(counts)
    else:
        _, p = signed_rank_counts(*diff)
    m = group_means(counts, values)
    sig = np.nan_to_num(p, nan=1.0) < alpha
    return sig, sig & (m[..., 1] > m[..., 0])


#: Of the interval's error ``1 - ci``, the share spent on the lower bound of the positive share
#: (Bonferroni split; the rest goes to the upper bound): a scenario the edit leaves alone has a
#: shift of exactly 0 and can push only the lower bound past the truth, while the upper bound
#: misses only if a scenario with a positive shift is found confidently negative.
LOWER_SHARE = 0.9

#: The ``halo_interval`` column by ``paper_tests``.
HALO_INTERVAL = {
    False: "positive_share_stepdown_max_t (share of tagged scenarios with a positive true shift)",
    True: "face_bootstrap_percentile_of_halo_rate (paper)",
}


def _step_down(t: np.ndarray, t_boot: np.ndarray, alpha: float) -> np.ndarray:
    """Step-down max-t (Romano-Wolf): which one-sided nulls ``theta_s <= 0`` are rejected at
    family-wise level ``alpha``, from the statistics ``t[s]`` (NaN = not tested) and their
    centred bootstrap replicates ``t_boot[b, s]``."""
    valid = ~np.isnan(t)
    rejected = np.zeros(len(t), dtype=bool)
    while True:
        active = valid & ~rejected
        if not active.any():
            return rejected
        crit = np.quantile(t_boot[:, active].max(axis=1), 1.0 - alpha)
        new = active & (t > crit)
        if not new.any():
            return rejected
        rejected |= new


def positive_share_bounds(
    d: np.ndarray, ci: float, n_resamples: int, seed: int
) -> tuple[float, float, np.ndarray]:
    """Confidence bounds of the share of scenarios whose true mean shift is positive.

    ``d[f, s]``: person ``f``'s within-person difference in scenario ``s`` (NaN = none). Each
    scenario's t statistic of the mean difference is compared with a Gaussian-multiplier
    bootstrap over persons (one multiplier per person, shared by every scenario: the scenarios'
    dependence through shared people is kept). The lower bound counts the scenarios a
    step-down max-t procedure finds positive at family-wise level ``LOWER_SHARE * (1 - ci)``,
    the upper bound all scenarios but those it finds negative at ``(1 - LOWER_SHARE) *
    (1 - ci)``: the interval covers the true share with probability at least ``ci`` (a wrong
    bound needs a false rejection). Returns (low, high, t) as shares of the scenarios given.
    """
    ok = ~np.isnan(d)
    n = ok.sum(axis=0).astype(np.float64)
    x = np.where(ok, d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.sum(axis=0) / np.where(n > 0, n, 1.0)
        resid = np.where(ok, d - mean, 0.0)
        ss = (resid**2).sum(axis=0)
        se = np.sqrt(ss / np.where(n > 1, n - 1.0, 1.0) / np.where(n > 0, n, 1.0))
        t = np.where((n > 1) & (ss > 0), mean / np.where(se > 0, se, 1.0), np.nan)
        g = np.random.default_rng(seed).standard_normal((n_resamples, d.shape[0]))
        t_boot = (g @ resid) / np.sqrt(np.where(ss > 0, ss, 1.0))  # (B, S), N(0, 1) each
    alpha = 1.0 - ci
    up = _step_down(t, t_boot, LOWER_SHARE * alpha)
    down = _step_down(-t, -t_boot, (1.0 - LOWER_SHARE) * alpha)
    total = d.shape[1]
    return float(up.sum() / total), float((total - down.sum()) / total), t


def halo_rate(
    data: PairedData,
    benchmark: Benchmark,
    spec: StatisticsSpec,
    boot: Bootstrap,
    paper_tests: bool = False,
) -> dict[str, float]:
    """The halo rate over the ``halo_tag`` scenarios and its confidence interval.

    ``halo_rate`` is the paper's rate: a scenario counts when its variation bias is significant
    (the test of :func:`variation_bias`, chosen by ``paper_tests``) and the variation's images
    pick the stereotyped (positive) trait more often; the rate is over all tagged scenarios. It
    counts decisions, so its expectation grows with the number of people and it has no
    population value for an interval to cover. The default interval ``halo_rate_low`` /
    ``halo_rate_high`` is therefore for the population quantity the rate stands for, the share
    of tagged scenarios whose true mean shift (variation minus base) is positive
    (:func:`positive_share_bounds`, level ``boot.ci``); ``paper_tests`` keeps the face
    bootstrap percentile interval of the paper's rate.
    """
    tagged = [
        i
        for i, sid in enumerate(data.scenario_ids)
        if spec.halo_tag in benchmark.scenario(sid).tags
    ]
    if not tagged:
        raise StylisticBiasError(
            f"{benchmark.source}: no judged scenario is tagged {spec.halo_tag!r} (halo rate)"
        )
    counts = data.weighted(None)[tagged]
    if paper_tests:
        w = face_weights(len(data.faces), boot.n_resamples, boot.seed)
        sig, halo = _halo_counts(counts, data.values, spec.alpha)
        _, bhalo = _halo_counts(data.weighted(w)[:, tagged], data.values, spec.alpha)
        lo, hi = percentile_ci(bhalo.mean(axis=1)[:, None], boot.ci)
        low, high = float(lo[0]), float(hi[0])
    else:
        onehot, diffs = difference_counts(data)
        sig, halo = _halo_counts(counts, data.values, spec.alpha, (onehot[:, tagged].sum(0), diffs))
        d = np.round(data.person_differences()[:, tagged], DERIVED_DECIMALS)
        low, high, _ = positive_share_bounds(d, boot.ci, boot.n_resamples, boot.seed)
    n = len(tagged)
    return {
        "n_scenarios": float(n),
        "n_significant": float(sig.sum()),
        "n_halo": float(halo.sum()),
        "n_opposite": float((sig & ~halo).sum()),
        "halo_rate": float(halo.sum() / n),
        "halo_rate_low": low,
        "halo_rate_high": high,
        "halo_interval": HALO_INTERVAL[paper_tests],
        "significant_rate": float(sig.sum() / n),
    }
