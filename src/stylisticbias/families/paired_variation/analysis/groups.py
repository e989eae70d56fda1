"""The demographic tests of a paired-variation protocol: Kruskal-Wallis between an axis's groups
(Tables 31-33), between a scenario's stereotyped groups (Tables 17-30), the gap between two
groups, and the share of significant scenarios per category (Tables 2, 31-33)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci
from stylisticbias.benchmark import Benchmark
from stylisticbias.benchmark.sections import StatisticsSpec
from stylisticbias.families.paired_variation.analysis.counts import (
    Bootstrap,
    PairedData,
    axis_groups,
    gap_ci,
    group_means,
    kruskal_counts,
)


def group_gap(
    data: PairedData, column: str, first: str, second: str, boot: Bootstrap
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per scenario: mean phi of group ``second`` minus group ``first`` of a demographic column
    (all images), with its face-bootstrap CI."""
    w = face_weights(len(data.faces), boot.n_resamples, boot.seed)
    c = data.by_group(column, [first, second]).sum(axis=1)  # (S, 2, U)
    bc = data.by_group(column, [first, second], w).sum(axis=2)  # (B, S, 2, U)
    return gap_ci(c, bc, data.values, boot.ci)


def group_tests(
    data: PairedData, benchmark: Benchmark, spec: StatisticsSpec, boot: Bootstrap
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per scenario and axis of ``spec.group_tests``: KW of phi between the axis's groups (all
    images, both kinds), and the group means with bootstrap CIs (Tables 31-33)."""
    w = face_weights(len(data.faces), boot.n_resamples, boot.seed)
    tests, means = [], []
    for axis in spec.group_tests:
        col = spec.column(axis)
        groups = axis_groups(data, benchmark, col)
        if not groups:
            continue
        c = data.by_group(col, groups).sum(axis=1)  # (S, G, U)
        h, p, k = kruskal_counts(c)
        m = group_means(c, data.values)  # (S, G)
        bm = group_means(data.by_group(col, groups, w).sum(axis=2), data.values)  # (B, S, G)
        lo, hi = percentile_ci(bm.reshape(bm.shape[0], -1), boot.ci)
        lo, hi = lo.reshape(m.shape), hi.reshape(m.shape)
        n = c.sum(axis=-1)
        for s, sid in enumerate(data.scenario_ids):
            finite = ~np.isnan(m[s])
            order = np.argsort(np.where(finite, m[s], np.inf))
            tests.append(
                {
                    "scenario_id": sid,
                    "axis": axis,
                    "n_groups": float(k[s]),
                    "h": h[s],
                    "pval": p[s],
                    "significant_alpha": bool(np.nan_to_num(p[s], nan=1.0) < spec.alpha),
                    "highest_group": groups[int(np.nanargmax(m[s]))] if finite.any() else "",
                    "lowest_group": groups[int(order[0])] if finite.any() else "",
                }
            )
            for g, name in enumerate(groups):
                means.append(
                    {
                        "scenario_id": sid,
                        "axis": axis,
                        "group": name,
                        "n": n[s, g],
                        "mean": m[s, g],
                        "mean_low": lo[s, g],
                        "mean_high": hi[s, g],
                    }
                )
    return pd.DataFrame(tests), pd.DataFrame(means)


def stereotype_groups(data: PairedData, benchmark: Benchmark, spec: StatisticsSpec) -> pd.DataFrame:
    """Scenarios with a ``stereotype``: KW between its two groups (all images) and whether the
    stereotyped group leans to the stereotyped choice (Tables 17-30)."""
    rows = []
    for s, sid in enumerate(data.scenario_ids):
        st = benchmark.scenario(sid).stereotype
        if st is None or st.axis not in data.labels:
            continue
        if st.negative:
            pair = [st.positive, st.negative]
            c = data.by_group(st.axis, pair)[s].sum(axis=0)  # (2, U)
        else:  # one group against all others
            lab = data.labels[st.axis]
            c = np.stack(
                [
                    data.weighted(None, lab == st.positive)[s].sum(axis=0),
                    data.weighted(None, lab != st.positive)[s].sum(axis=0),
                ]
            )
        h, p, _ = kruskal_counts(c)
        m = group_means(c, data.values)
        sig = bool(np.nan_to_num(p, nan=1.0) < spec.alpha)
        rows.append(
            {
                "scenario_id": sid,
                "axis": st.axis,
                "group_stereotyped": st.positive,
                "group_other": st.negative or "others",
                "mean_stereotyped_group": m[0],
                "mean_other_group": m[1],
                "h": float(h),
                "pval": float(p),
                "significant_alpha": sig,
                "stereotyped_direction": bool(sig and m[0] > m[1]),
            }
        )
    return pd.DataFrame(rows)


def category_rates(bias: pd.DataFrame, tests: pd.DataFrame, benchmark: Benchmark) -> pd.DataFrame:
    """Share of significant scenarios per (sub)category for every test (Tables 2, 31-33):
    ``test`` = ``variation`` or an axis; ``subcategory`` ``all`` = the whole category, and
    category ``all`` = every scenario (the "Total (91)" column)."""
    cols = ["bias_test", "scenario_id", "significant_alpha"]
    frames = [bias.assign(bias_test="variation")[cols]]
    if len(tests):
        frames.append(tests.rename(columns={"axis": "bias_test"})[cols])
    sig = pd.concat(frames, ignore_index=True)
    meta = pd.DataFrame(
        [(s.id, s.category, s.subcategory) for s in benchmark.scenarios],
        columns=["scenario_id", "scenario_category", "subcategory"],
    )
    sig = sig.merge(meta, on="scenario_id", how="left")
    rows = []
    for test, g in sig.groupby("bias_test", sort=False):
        parts = [("all", "all", g)]
        for cat, gc in g.groupby("scenario_category", sort=False):
            parts.append((cat, "all", gc))
            for sub, gs in gc.groupby("subcategory", sort=False):
                if sub:
                    parts.append((cat, sub, gs))
        for cat, sub, part in parts:
            rows.append(
                {
                    "bias_test": test,
                    "scenario_category": cat,
                    "subcategory": sub,
                    "n_scenarios": float(len(part)),
                    "n_significant": float(part["significant_alpha"].sum()),
                    "share_significant": float(part["significant_alpha"].mean()),
                }
            )
    return pd.DataFrame(rows)
