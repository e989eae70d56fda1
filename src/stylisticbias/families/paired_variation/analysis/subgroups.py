"""W^attr (Tables 5, A, B) and Table 4: the variation bias compared between subgroups, and the
demographic bias compared between the base and the variation images.

The paper compares Kruskal-Wallis H values: W^attr the variation-bias H of two subgroups, Table
4 the demographic H of the base and of the variation images, each by a Wilcoxon signed-rank test
across scenarios, Bonferroni-corrected (``paper_tests=True``, ``analysis.definitions:
official``). H measures evidence, not effect: at the same edit effect it grows with the number
of people, so two subgroups of unequal size have unequal H although the edit moves both alike,
and W^attr rejects that true null most of the time (the family's README, "Tests and their
calibration").

The default compares effects, one value per person:

- **W^attr**: each person's *oriented edit effect* ``u_p``, the mean over scenarios of
  ``o_s * (phi_p,s(variation) - phi_p,s(base))`` with ``o_s`` the direction the edit moves the
  scenario (the sign of the axis's groups' mean shifts, each weighted by its precision:
  :func:`axis_orientation`), is compared between the two subgroups by Welch's t-test. The mean
  of ``u_p`` in a subgroup is the scenario-averaged subgroup shift in the edit's direction,
  which does not grow with the subgroup's size; Welch's test of one value per person respects
  that the scenarios share people. The precision weights keep ``o_s`` uncorrelated with the
  contrast of any two groups' means, also when their differences spread unequally (the sign of
  the mean over all people followed the group that spreads more: 0.13-0.145 rejections of a
  true null at alpha 0.05 with a group main effect).
- **Table 4**: the demographic gaps on the variation images equal the gaps on the base images
  plus the differences between the groups' edit shifts, so "the demographic bias is the same on
  both kinds" is "every group's mean within-person shift is the same" (a group's gap on the
  mean phi changes by exactly the difference of the groups' mean shifts). Per scenario
  Welch's heteroscedastic one-way ANOVA F of the within-person differences between the axis's
  groups (each group's mean weighted by its own variance, so a group whose differences spread
  more or less than the others' does not read as a shift), mapped by its approximate
  F(k - 1, nu) p-value to the chi-square(k - 1) scale and summed over scenarios
  (:func:`sum_welch_anova`); its p-value by permuting the persons' group labels (each person
  keeps its whole row of differences, so the dependence between scenarios is kept). Permuting
  a studentized statistic is exact when the groups' rows are exchangeable and asymptotically
  exact when only their means agree (Janssen 1997; Chung & Romano 2013). The earlier default,
  the summed Kruskal-Wallis H (``stylisticbias_dev.bench.summed_kruskal``, kept for the
  calibration's comparison), is exact only when the groups'
  differences share one distribution: a group with a main effect and no edit effect (its two
  images alike, so Table 4's null holds) has differences of another spread, and H rejected
  that null 0.10 of the time at alpha 0.05 (the family's README). Summing the bare
  Welch-James quadratic forms instead adds up each scenario's small-sample excess over its
  chi-square limit (0.066 [0.050, 0.086] there); the same on the pooled mid-ranks is not
  studentized right and over-rejected where a group's differences are nearly all 0.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import special, stats

from stylisticbias.benchmark import Benchmark
from stylisticbias.benchmark.sections import StatisticsSpec
from stylisticbias.families.paired_variation.analysis.counts import (
    DERIVED_DECIMALS,
    Bootstrap,
    PairedData,
    axis_groups,
    kruskal_counts,
)

#: The ``test`` and ``unit`` columns of W^attr by ``paper_tests``.
SUBGROUP_TEST = {
    False: ("welch_t_person_oriented_shift", "person"),
    True: ("wilcoxon_signed_rank_subgroup_h (paper)", "scenario"),
}
#: The ``test`` and ``unit`` columns of Table 4 by ``paper_tests``.
BY_KIND_TEST = {
    False: ("permutation_sum_welch_anova_person_differences", "person"),
    True: ("wilcoxon_signed_rank_h_base_vs_variation (paper)", "scenario"),
}


def _wilcoxon(x: np.ndarray, y: np.ndarray, zero_method: str) -> tuple[float, float, int]:
    """Two-sided Wilcoxon signed-rank test of paired H values (pairs with a NaN left out)."""
    keep = ~(np.isnan(x) | np.isnan(y))
    n = int(keep.sum())
    if n == 0 or np.all(x[keep] == y[keep]):
        return np.nan, np.nan, n
    res = stats.wilcoxon(x[keep], y[keep], zero_method=zero_method)
    return float(res.statistic), float(res.pvalue), n


#: Pseudo-persons of the pooled variance in each group's variance (:func:`axis_orientation`).
ORIENTATION_SHRINK = 2.0


def axis_orientation(d: np.ndarray, member: np.ndarray, n_groups: int) -> np.ndarray:
    """The per-scenario orientation ``o_s`` (``(S,)``: +1, -1 or 0) of one axis: the sign of
    the precision-weighted sum of its groups' mean differences, ``sum_g w_g,s m_g,s`` with
    ``w_g,s = n_g,s / v_g,s``.

    ``d``: the persons' differences (``(F, S)``, NaN where missing); ``member``: each person's
    group index (``-1`` outside the axis). The weights make the orientation uncorrelated with
    every contrast of two groups' means (``Cov(sum_g w_g m_g, m_a - m_b) = w_a V_a - w_b V_b =
    0`` when ``w_g = 1 / V_g``), so orienting by it does not favour the group whose differences
    spread more. ``v_g,s`` is the group's variance shrunk towards the scenario's pooled
    variance with :data:`ORIENTATION_SHRINK` pseudo-persons (``((n - 1) s^2 + k s_pool^2) /
    (n - 1 + k)``): with raw variances a small group whose sample variance is low by chance
    steers the sign (race, 5 groups: 0.069 rejections at alpha 0.05); with 20 pseudo-persons
    a group whose differences are nearly all 0 keeps too little weight (0.21 at +3 logits);
    2 holds both (0.043-0.060 over the bench's designs; the family's README). The earlier
    orientation, the sign of the mean over all persons, weights groups by size, not precision:
    where a group's differences spread more (a group main effect moves the other's answers
    towards a bound), the sign follows that group and Welch's t rejected the W^attr null
    0.13-0.145 of the time at alpha 0.05."""
    ok = ~np.isnan(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.nanvar(np.where(member[:, None] >= 0, d, np.nan), axis=0, ddof=1)
    pooled = np.nan_to_num(pooled, nan=0.0)
    total = np.zeros(d.shape[1])
    for g in range(n_groups):
        x, okg = d[member == g], ok[member == g]
        n = okg.sum(axis=0)
        xs = np.where(okg, x, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.where(n > 0, xs.sum(axis=0) / np.maximum(n, 1), 0.0)
            ss = np.where(okg, (x - m) ** 2, 0.0).sum(axis=0)
        v = (ss + ORIENTATION_SHRINK * pooled) / (np.maximum(n - 1, 0) + ORIENTATION_SHRINK)
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.where((n > 0) & (v > 0), n / np.where(v > 0, v, 1.0), 0.0)
        total += w * m
    return np.sign(np.round(total, DERIVED_DECIMALS + 2))


def overall_orientation(d: np.ndarray) -> np.ndarray:
    """The orientation before :func:`axis_orientation`: the sign of each scenario's mean
    difference over every person (``analysis.definitions: official`` keeps it, so the
    descriptive ``effect_a``/``effect_b`` beside the paper's test are unchanged there)."""
    ok = ~np.isnan(d)
    n_s = ok.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_s = np.where(n_s > 0, np.where(ok, d, 0.0).sum(axis=0) / np.maximum(n_s, 1), 0.0)
    return np.sign(np.round(mean_s, DERIVED_DECIMALS + 2))


def oriented_person_effects(d: np.ndarray, o: np.ndarray) -> np.ndarray:
    """Per person the oriented edit effect ``u_p`` (``(F,)``, NaN without a difference): the
    mean over the person's scenarios of ``o_s * d_p,s``."""
    ok = ~np.isnan(d)
    n_p = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_p > 0, np.where(ok, d * o, 0.0).sum(axis=1) / np.maximum(n_p, 1), np.nan)


def _welch(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Welch's t (x minus y) and its two-sided p; NaN with fewer than two values in a group or
    no variance."""
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    if len(x) < 2 or len(y) < 2 or (np.var(x) == 0 and np.var(y) == 0):
        return np.nan, np.nan
    res = stats.ttest_ind(x, y, equal_var=False)
    return float(res.statistic), float(res.pvalue)


def subgroup_variation_bias(
    data: PairedData,
    benchmark: Benchmark,
    spec: StatisticsSpec,
    zero_method: str = "wilcox",
    paper_tests: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """W^attr (Tables 5, A, B): per subgroup and scenario the variation bias H (the paper's) and
    the mean within-person shift; for every pair of subgroups of an axis a test, Bonferroni
    over the axis's pairs.

    Default: Welch's t of the persons' oriented edit effects (:func:`oriented_person_effects`,
    oriented per axis by :func:`axis_orientation`) between the two subgroups; ``effect_a``/
    ``effect_b`` are the subgroups' means and ``stronger`` the subgroup with the larger one.
    ``paper_tests``: the paper's Wilcoxon signed-rank test of the paired H across scenarios,
    ``stronger`` = the larger mean H.
    """
    test_name, unit = SUBGROUP_TEST[paper_tests]
    d = data.person_differences()
    per_group, pairs = [], []
    for axis in spec.group_tests:
        col = spec.column(axis)
        groups = axis_groups(data, benchmark, col)
        c = data.by_group(col, groups)  # (S, 2, G, U)
        h, _, _ = kruskal_counts(np.moveaxis(c, 1, 2))  # (S, G): base vs variation per group
        member = data.group_index(col, groups)
        o = overall_orientation(d) if paper_tests else axis_orientation(d, member, len(groups))
        u = oriented_person_effects(d, o)
        for g, name in enumerate(groups):
            dg = d[member == g]
            n_g = (~np.isnan(dg)).sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                shift = np.where(n_g > 0, np.nansum(dg, axis=0) / np.maximum(n_g, 1), np.nan)
            per_group.extend(
                {"axis": axis, "group": name, "scenario_id": sid, "h": h[s, g], "shift": shift[s]}
                for s, sid in enumerate(data.scenario_ids)
            )
        combos = list(itertools.combinations(range(len(groups)), 2))
        for a, b in combos:
            ea = float(np.nanmean(u[member == a])) if (member == a).any() else np.nan
            eb = float(np.nanmean(u[member == b])) if (member == b).any() else np.nan
            ma, mb = float(np.nanmean(h[:, a])), float(np.nanmean(h[:, b]))
            if paper_tests:
                stat, p, n = _wilcoxon(h[:, a], h[:, b], zero_method)
                ra, rb = ma, mb
            else:
                stat, p = _welch(u[member == a], u[member == b])
                n = int((~np.isnan(d[(member == a) | (member == b)])).any(axis=0).sum())
                ra, rb = ea, eb
            pc = min(1.0, p * len(combos)) if not np.isnan(p) else np.nan
            pairs.append(
                {
                    "axis": axis,
                    "group_a": groups[a],
                    "group_b": groups[b],
                    "test": test_name,
                    "unit": unit,
                    "n_scenarios": float(n),
                    "mean_h_a": ma,
                    "mean_h_b": mb,
                    "effect_a": ea,
                    "effect_b": eb,
                    "stronger": groups[a] if ra > rb else groups[b] if rb > ra else "tie",
                    "statistic": stat,
                    "pval": p,
                    "pval_bonferroni": pc,
                    "n_comparisons": float(len(combos)),
                    "significant_alpha": bool(np.nan_to_num(pc, nan=1.0) < spec.alpha),
                }
            )
    return pd.DataFrame(per_group), pd.DataFrame(pairs)


#: A group's variance in a scenario is floored at this share of the scenario's variance over
#: every person (which no permutation changes): a small group whose values are all tied would
#: otherwise get an infinite weight.
WELCH_VARIANCE_FLOOR = 0.05


def sum_welch_anova(values: np.ndarray, present: np.ndarray, onehot: np.ndarray) -> np.ndarray:
    """Sum over scenarios of Welch's ANOVA on the chi-square scale, from ``values[f, s]`` (0
    where missing), ``present[f, s]`` and group memberships ``onehot[..., g, f]`` (a
    permutation per leading index). Per scenario, over the ``k`` groups with two or more
    values, with sizes ``n_g``, means ``m_g`` and variances ``v_g`` (ddof 1, floored at
    :data:`WELCH_VARIANCE_FLOOR` times the scenario's variance over every person): weights
    ``w_g = n_g / v_g``, ``W = sum w_g``, ``m_w = sum w_g m_g / W``,
    ``L = sum (1 - w_g / W)^2 / (n_g - 1)``,
    ``F = sum w_g (m_g - m_w)^2 / (k - 1) / (1 + 2 (k - 2) L / (k^2 - 1))`` on
    ``(k - 1, (k^2 - 1) / (3 L))`` degrees of freedom (Welch 1951; for two groups the square of
    Welch's t on the Welch-Satterthwaite df), and the scenario adds the chi-square(k - 1)
    value of F's upper-tail p-value (p floored at 1e-300; :func:`chi2_upper_quantile`).
    Scenarios with fewer than two such groups or all values equal add nothing."""
    f_n, s_n = values.shape
    stacked = np.concatenate([present, values, values**2], axis=1)  # (F, 3S): one product
    sums = (onehot.reshape(-1, f_n) @ stacked).reshape(*onehot.shape[:-1], 3, s_n)
    n, s1, s2 = sums[..., 0, :], sums[..., 1, :], sums[..., 2, :]  # (..., G, S)
    total = present.sum(axis=0)  # (S,)
    with np.errstate(invalid="ignore", divide="ignore"):
        v_all = ((values**2).sum(axis=0) - values.sum(axis=0) ** 2 / np.maximum(total, 1.0)) / (
            np.maximum(total - 1.0, 1.0)
        )
        m = s1 / np.where(n > 0, n, 1.0)
        v = (s2 - n * m**2) / np.where(n > 1, n - 1.0, 1.0)
        v = np.maximum(v, WELCH_VARIANCE_FLOOR * v_all)
        ok = (n > 1) & (v_all > 0)
        w = np.where(ok, n / np.where(ok, v, 1.0), 0.0)
        sw = w.sum(axis=-2)
        sw1 = np.where(sw > 0, sw, 1.0)
        mw = (w * m).sum(axis=-2) / sw1
        q = (w * (m - mw[..., None, :]) ** 2).sum(axis=-2)
        lam = np.where(
            ok, (1.0 - w / sw1[..., None, :]) ** 2 / np.where(n > 1, n - 1.0, 1.0), 0.0
        ).sum(axis=-2)
    k = ok.sum(axis=-2)
    good = (k >= 2) & (lam > 0)
    k1 = np.where(good, k, 2).astype(np.float64) - 1.0
    lam = np.where(good, lam, 1.0)
    f = q / k1 / (1.0 + 2.0 * (k1 - 1.0) / (k1 * (k1 + 2.0)) * lam)
    p = np.maximum(special.fdtrc(k1, k1 * (k1 + 2.0) / (3.0 * lam), f), 1e-300)
    return np.where(good, chi2_upper_quantile(p, k1), 0.0).sum(axis=-1)


def chi2_upper_quantile(p: np.ndarray, df: np.ndarray) -> np.ndarray:
    """The chi-square(``df``) value with upper-tail probability ``p``: exact for 1 (the squared
    normal quantile of ``p / 2``) and 2 (``-2 log p``) degrees of freedom, the Wilson-Hilferty
    cube-root approximation for more (monotone in ``p``; SciPy's exact inverse is a hundred
    times slower, and every permutation of every scenario needs one)."""
    z = -special.ndtri(p)
    wh = df * np.maximum(1.0 - 2.0 / (9.0 * df) + z * np.sqrt(2.0 / (9.0 * df)), 0.0) ** 3
    with np.errstate(divide="ignore"):
        two = -2.0 * np.log(p)
    return np.where(df == 1.0, special.ndtri(p / 2.0) ** 2, np.where(df == 2.0, two, wh))


def by_kind_permutation(
    d: np.ndarray, member: np.ndarray, n_groups: int, n_permutations: int, seed: int
) -> tuple[float, float]:
    """Table 4's default test: the sum over scenarios of Welch's ANOVA on the chi-square scale
    (:func:`sum_welch_anova`) of the within-person differences ``d[f, s]`` (NaN = missing)
    between groups (``member[f]``, -1 = in none), and its permutation p-value
    ``(1 + #{T* >= T}) / (1 + B)`` over ``n_permutations`` shuffles of the persons' group
    labels (seeded)."""
    keep = member >= 0
    d, member = d[keep], member[keep]
    if len(member) < 2 or len(np.unique(member)) < 2:
        return np.nan, np.nan
    present = (~np.isnan(d)).astype(np.float64)
    values = np.where(present > 0, d, 0.0)
    onehot = (member[None, :] == np.arange(n_groups)[:, None]).astype(np.float64)
    observed = float(sum_welch_anova(values, present, onehot))
    rng = np.random.default_rng(seed)
    perm = rng.permuted(np.tile(member, (n_permutations, 1)), axis=1)  # (B, F)
    ponehot = (perm[:, None, :] == np.arange(n_groups)[None, :, None]).astype(np.float64)
    null = sum_welch_anova(values, present, ponehot)
    p = (1.0 + float((null >= observed - 1e-9 * max(1.0, abs(observed))).sum())) / (
        1.0 + n_permutations
    )
    return observed, p


def group_bias_by_kind(
    data: PairedData,
    benchmark: Benchmark,
    spec: StatisticsSpec,
    zero_method: str = "wilcox",
    paper_tests: bool = False,
    boot: Bootstrap | None = None,
) -> pd.DataFrame:
    """Table 4: per axis, is the demographic bias the same on the base and on the variation
    images? Bonferroni over the axes tested; ``mean_h_base``/``mean_h_variation`` are the
    paper's demographic H on each kind (mean over scenarios) under both.

    Default: :func:`by_kind_permutation` of the within-person differences between the axis's
    groups (``boot.n_resamples`` permutations, ``boot.seed``). ``paper_tests``: the paper's
    Wilcoxon signed-rank test of H(base) against H(variation) paired by scenario.
    """
    boot = boot or Bootstrap()
    test_name, unit = BY_KIND_TEST[paper_tests]
    d = np.round(data.person_differences(), DERIVED_DECIMALS)
    rows = []
    axes = list(spec.group_tests)
    for i, axis in enumerate(axes):
        col = spec.column(axis)
        groups = axis_groups(data, benchmark, col)
        h, _, _ = kruskal_counts(data.by_group(col, groups))  # (S, 2)
        if paper_tests:
            stat, p, n = _wilcoxon(h[:, 0], h[:, 1], zero_method)
        else:
            member = data.group_index(col, groups)
            stat, p = by_kind_permutation(
                d, member, len(groups), boot.n_resamples, boot.seed + 7919 * (i + 1)
            )
            n = int((~np.isnan(d[member >= 0])).any(axis=0).sum())
        pc = min(1.0, p * len(axes)) if not np.isnan(p) else np.nan
        rows.append(
            {
                "axis": axis,
                "test": test_name,
                "unit": unit,
                "n_scenarios": float(n),
                "mean_h_base": float(np.nanmean(h[:, 0])),
                "mean_h_variation": float(np.nanmean(h[:, 1])),
                "statistic": stat,
                "pval": p,
                "pval_bonferroni": pc,
                "n_comparisons": float(len(axes)),
                "significant_alpha": bool(np.nan_to_num(pc, nan=1.0) < spec.alpha),
            }
        )
    return pd.DataFrame(rows)
