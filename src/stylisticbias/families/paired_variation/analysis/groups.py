"""The demographic tests of a paired-variation protocol: Kruskal-Wallis between an axis's groups
(Tables 31-33), between a scenario's stereotyped groups (Tables 17-30), the gap between two
groups, and the share of significant scenarios per category (Tables 2, 31-33).

The unit of a demographic test is the **person** (default): one value per person, the mean phi
of the person's images, so the two images of one person are not counted as two independent
observations. ``paper_tests=True`` (``analysis.definitions: official``) runs the paper's test
instead: Kruskal-Wallis over every image of both kinds pooled (unit ``image``), which reproduces
the paper's numbers and rejects a true null too often when a person's two images are alike
(``README.md`` of the family, "Tests and their calibration").
"""

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
    t_halfwidth,
    value_counts,
)

#: The ``test`` and ``unit`` columns of the demographic tests: (test, unit) by ``paper_tests``.
GROUP_TEST = {
    False: ("kruskal_wallis_person_means", "person"),
    True: ("kruskal_wallis_pooled_images (paper)", "image"),
}


def _person_counts(data: PairedData, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``(S, G, U)`` frequency tables of the person means (one value per person)."""
    counts, _ = value_counts(data.person_means(), group, n_groups)
    return counts


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
    data: PairedData,
    benchmark: Benchmark,
    spec: StatisticsSpec,
    boot: Bootstrap,
    paper_tests: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per scenario and axis of ``spec.group_tests``: KW between the axis's groups of the
    person means of phi (``paper_tests``: of phi over all images, both kinds pooled), and the
    group means of phi over the images with Student-t CIs over the group's person means
    (``paper_tests``: face-bootstrap percentile CIs) (Tables 31-33)."""
    w = face_weights(len(data.faces), boot.n_resamples, boot.seed) if paper_tests else None
    test_name, unit = GROUP_TEST[paper_tests]
    tests, means = [], []
    for axis in spec.group_tests:
        col = spec.column(axis)
        groups = axis_groups(data, benchmark, col)
        if not groups:
            continue
        c = data.by_group(col, groups).sum(axis=1)  # (S, G, U)
        person = None if paper_tests else data.group_index(col, groups)
        tested = c if person is None else _person_counts(data, person, len(groups))
        h, p, k = kruskal_counts(tested)
        m = group_means(c, data.values)  # (S, G)
        if paper_tests:  # face-bootstrap percentile intervals (the numbers before person units)
            bm = group_means(data.by_group(col, groups, w).sum(axis=2), data.values)  # (B,S,G)
            lo, hi = percentile_ci(bm.reshape(bm.shape[0], -1), boot.ci)
            lo, hi = lo.reshape(m.shape), hi.reshape(m.shape)
        else:  # Student-t over the person means of each group
            hw = t_halfwidth(
                data.person_means(), data.group_index(col, groups), len(groups), boot.ci
            )
            lo, hi = m - hw, m + hw
        n = c.sum(axis=-1)
        for s, sid in enumerate(data.scenario_ids):
            finite = ~np.isnan(m[s])
            order = np.argsort(np.where(finite, m[s], np.inf))
            tests.append(
                {
                    "scenario_id": sid,
                    "axis": axis,
                    "test": test_name,
                    "unit": unit,
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


def stereotype_groups(
    data: PairedData, benchmark: Benchmark, spec: StatisticsSpec, paper_tests: bool = False
) -> pd.DataFrame:
    """Scenarios with a ``stereotype``: KW between its two groups of the person means of phi
    (``paper_tests``: of phi over all images pooled), the groups' mean phi over their images,
    and whether the stereotyped group leans to the stereotyped choice (Tables 17-30)."""
    test_name, unit = GROUP_TEST[paper_tests]
    means = None if paper_tests else data.person_means()
    rows = []
    for s, sid in enumerate(data.scenario_ids):
        st = benchmark.scenario(sid).stereotype
        if st is None or st.axis not in data.labels:
            continue
        lab = data.labels[st.axis]
        if st.negative:
            pair = [st.positive, st.negative]
            c = data.by_group(st.axis, pair)[s].sum(axis=0)  # (2, U)
            group = data.group_index(st.axis, pair)
        else:  # one group against all others
            c = np.stack(
                [
                    data.weighted(None, lab == st.positive)[s].sum(axis=0),
                    data.weighted(None, lab != st.positive)[s].sum(axis=0),
                ]
            )
            group = np.where(lab == st.positive, 0, 1)
        if means is None:
            h, p, _ = kruskal_counts(c)
        else:
            pc, _ = value_counts(means[:, [s]], group, 2)
            h, p, _ = kruskal_counts(pc[0])
        m = group_means(c, data.values)
        sig = bool(np.nan_to_num(p, nan=1.0) < spec.alpha)
        rows.append(
            {
                "scenario_id": sid,
                "axis": st.axis,
                "group_stereotyped": st.positive,
                "group_other": st.negative or "others",
                "test": test_name,
                "unit": unit,
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
