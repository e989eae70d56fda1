"""W^attr (Tables 5, A, B) and Table 4: the variation bias compared between subgroups, and the
demographic bias compared between the base and the variation images, by Wilcoxon signed-rank
tests across scenarios (Bonferroni-corrected)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.benchmark import Benchmark
from stylisticbias.benchmark.sections import StatisticsSpec
from stylisticbias.families.paired_variation.analysis.counts import (
    PairedData,
    axis_groups,
    kruskal_counts,
)


def _wilcoxon(x: np.ndarray, y: np.ndarray, zero_method: str) -> tuple[float, float, int]:
    """Two-sided Wilcoxon signed-rank test of paired H values (pairs with a NaN left out)."""
    keep = ~(np.isnan(x) | np.isnan(y))
    n = int(keep.sum())
    if n == 0 or np.all(x[keep] == y[keep]):
        return np.nan, np.nan, n
    res = stats.wilcoxon(x[keep], y[keep], zero_method=zero_method)
    return float(res.statistic), float(res.pvalue), n


def subgroup_variation_bias(
    data: PairedData, benchmark: Benchmark, spec: StatisticsSpec, zero_method: str = "wilcox"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """W^attr (Tables 5, A, B): the variation bias H per subgroup and scenario, and for every
    pair of subgroups of an axis a Wilcoxon signed-rank test of the paired H across scenarios,
    Bonferroni-corrected over the axis's pairs; ``stronger`` = the group with the larger mean H.
    """
    per_group, pairs = [], []
    for axis in spec.group_tests:
        col = spec.column(axis)
        groups = axis_groups(data, benchmark, col)
        c = data.by_group(col, groups)  # (S, 2, G, U)
        h, _, _ = kruskal_counts(np.moveaxis(c, 1, 2))  # (S, G): base vs variation per group
        for g, name in enumerate(groups):
            per_group.extend(
                {"axis": axis, "group": name, "scenario_id": sid, "h": h[s, g]}
                for s, sid in enumerate(data.scenario_ids)
            )
        combos = list(itertools.combinations(range(len(groups)), 2))
        for a, b in combos:
            stat, p, n = _wilcoxon(h[:, a], h[:, b], zero_method)
            ma, mb = float(np.nanmean(h[:, a])), float(np.nanmean(h[:, b]))
            pc = min(1.0, p * len(combos)) if not np.isnan(p) else np.nan
            pairs.append(
                {
                    "axis": axis,
                    "group_a": groups[a],
                    "group_b": groups[b],
                    "n_scenarios": float(n),
                    "mean_h_a": ma,
                    "mean_h_b": mb,
                    "stronger": groups[a] if ma > mb else groups[b] if mb > ma else "tie",
                    "statistic": stat,
                    "pval": p,
                    "pval_bonferroni": pc,
                    "n_comparisons": float(len(combos)),
                    "significant_alpha": bool(np.nan_to_num(pc, nan=1.0) < spec.alpha),
                }
            )
    return pd.DataFrame(per_group), pd.DataFrame(pairs)


def group_bias_by_kind(
    data: PairedData, benchmark: Benchmark, spec: StatisticsSpec, zero_method: str = "wilcox"
) -> pd.DataFrame:
    """Table 4: per axis, the demographic bias H on the base images against H on the variation
    images, paired by scenario (Wilcoxon signed-rank, Bonferroni over the axes tested)."""
    rows = []
    axes = list(spec.group_tests)
    for axis in axes:
        col = spec.column(axis)
        groups = axis_groups(data, benchmark, col)
        h, _, _ = kruskal_counts(data.by_group(col, groups))  # (S, 2)
        stat, p, n = _wilcoxon(h[:, 0], h[:, 1], zero_method)
        pc = min(1.0, p * len(axes)) if not np.isnan(p) else np.nan
        rows.append(
            {
                "axis": axis,
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
