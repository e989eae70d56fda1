"""Statistics of a paired-variation protocol (``statistics.suite: paired_variation``).

The design of *Beauty and the Bias* (Sec. 3.5, Sec. 4): every person is judged in a base image
and in one variation of it (the original photo and the beauty-filtered one), phi_i(x) is the
share of a scenario's answers that pick its stereotyped choice, and

- the **variation bias** of scenario i is a Kruskal-Wallis test of {phi_i(x^o)} against
  {phi_i(x^b)} (two independent samples, as the paper treats them; significant at the
  protocol's alpha, no correction across scenarios), its direction the group with the higher
  mean;
- the **halo rate** is the share of the scenarios tagged ``statistics.halo_tag`` that are
  significant *and* lean to the stereotyped (positive) choice in the variation;
- the **demographic biases** are Kruskal-Wallis tests of phi between the groups of an axis
  (all images of both kinds); a scenario with a ``stereotype`` is also tested between its two
  stereotyped groups (Tables 17-30) with the direction of the stereotype;
- **W^attr** (Tables 5, A, B): the variation bias H computed within each subgroup of an axis,
  compared between every pair of subgroups by a Wilcoxon signed-rank test across scenarios,
  Bonferroni-corrected within the axis; and Table 4's converse, the demographic bias H on the
  base images against the variation images.

Every Kruskal-Wallis test here is computed from **counts**: phi takes few distinct values (k/12
for 12 answers), so a test is a (groups x values) table of counts, and a face-level bootstrap
replicate of every test at once is the draw-count matrix times the per-face count tensor
(:mod:`stylisticbias.analysis.bootstrap`). :func:`kruskal_counts` equals
``scipy.stats.kruskal`` (tie-corrected H, chi-square p with groups - 1 df) on the expanded data;
the tests check that. A test whose values are all equal has no H (NaN, not significant).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci
from stylisticbias.benchmark import Benchmark
from stylisticbias.benchmark.sections import StatisticsSpec
from stylisticbias.errors import StylisticBiasError

#: Decimals phi is rounded to before its distinct values are counted (k/12 is not exact).
PHI_DECIMALS = 9


def kruskal_counts(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kruskal-Wallis H, p and the number of non-empty groups from frequency tables.

    ``counts[..., g, u]`` is how often value ``u`` (values sorted ascending along the last
    axis) occurs in group ``g``; counts may be fractional (bootstrap weights are integers, but
    any non-negative frequency works). Groups with no observation are left out, as if not
    given. H is tie-corrected; p is the chi-square tail with (non-empty groups - 1) df. H and p
    are NaN with fewer than two non-empty groups or when every value is equal.
    """
    counts = np.asarray(counts, dtype=np.float64)
    t = counts.sum(axis=-2)  # (..., U) ties per value
    n_total = t.sum(axis=-1)  # (...)
    rank = np.cumsum(t, axis=-1) - t + (t + 1.0) / 2.0  # mid-rank of each value
    rank_sum = (counts * rank[..., None, :]).sum(axis=-1)  # (..., G)
    n_g = counts.sum(axis=-1)  # (..., G)
    k = (n_g > 0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        term = np.where(n_g > 0, rank_sum**2 / np.where(n_g > 0, n_g, 1.0), 0.0).sum(axis=-1)
        h0 = 12.0 / (n_total * (n_total + 1.0)) * term - 3.0 * (n_total + 1.0)
        tie = 1.0 - (t**3 - t).sum(axis=-1) / (n_total**3 - n_total)
        h = np.where((k >= 2) & (tie > 0), h0 / np.where(tie > 0, tie, 1.0), np.nan)
    p = np.where(np.isnan(h), np.nan, stats.chi2.sf(np.where(np.isnan(h), 0.0, h), k - 1))
    return h, p, k


def _means(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Mean value per group from frequency tables (``counts[..., g, u]``; NaN when empty)."""
    n = counts.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (counts * values).sum(axis=-1) / np.where(n > 0, n, 1.0), np.nan)


@dataclass(frozen=True)
class PairedData:
    """One model's phi as per-face count tensors (the input of every test and bootstrap).

    ``counts[f, s, v, u]``: how often face ``f``'s image of kind ``v`` (0 = base,
    1 = variation) has phi equal to ``values[u]`` in scenario ``scenario_ids[s]`` (0 or 1 for
    real data; the face axis is what the bootstrap reweights). ``labels[axis][f]``: the face's
    group on each demographic column.
    """

    faces: tuple[str, ...]
    scenario_ids: tuple[int, ...]
    values: np.ndarray
    counts: np.ndarray
    labels: dict[str, np.ndarray]

    def weighted(self, weights: np.ndarray | None, mask: np.ndarray | None = None) -> np.ndarray:
        """Counts summed over faces: ``(S, V, U)``, or ``(B, S, V, U)`` for bootstrap weights
        ``(B, F)``; ``mask`` keeps a subset of faces."""
        c = self.counts if mask is None else self.counts[mask]
        if weights is None:
            return c.sum(axis=0)
        w = weights if mask is None else weights[:, mask]
        flat = w @ c.reshape(c.shape[0], -1)
        return flat.reshape((w.shape[0], *c.shape[1:]))

    def by_group(
        self, column: str, groups: Sequence[str], weights: np.ndarray | None = None
    ) -> np.ndarray:
        """Counts per group of a demographic column: ``([B,] S, V, G, U)``."""
        parts = [self.weighted(weights, self.labels[column] == g) for g in groups]
        return np.stack(parts, axis=-2)


def paired_data(scores: pd.DataFrame, benchmark: Benchmark, spec: StatisticsSpec) -> PairedData:
    """Build :class:`PairedData` from one model's score rows (``data/scores/model=M``).

    Keeps the base images and the images of the contrasted variation; rows without a valid
    phi are left out (as in the paper's means). Raises one line when either kind is missing.
    """
    if spec.variation is None:
        raise StylisticBiasError(f"{benchmark.source}: statistics.variation is not set")
    contrast = spec.variation
    is_base = scores["is_base"].to_numpy(dtype=bool)
    is_var = (
        ~is_base
        & (scores["attribute"].astype(str) == contrast.attribute).to_numpy()
        & (scores["value"].astype(str) == contrast.value).to_numpy()
    )
    rows = scores[(is_base | is_var) & scores["phi"].notna().to_numpy()]
    kinds = rows["is_base"].to_numpy(dtype=bool)
    if kinds.all() or not kinds.any():
        missing = contrast.label if kinds.all() else contrast.base_label
        raise StylisticBiasError(
            f"scores of model {scores['model'].iloc[0] if len(scores) else '?'}: no "
            f"{missing} images with a valid phi; the {spec.suite} statistics need both kinds"
        )
    faces = tuple(sorted(rows["face_id"].astype(str).unique()))
    scen = tuple(s.id for s in benchmark.scenarios if s.id in set(rows["scenario_id"]))
    phi = np.round(rows["phi"].to_numpy(dtype=np.float64), PHI_DECIMALS)
    values, u_ix = np.unique(phi, return_inverse=True)
    f_ix = pd.Index(faces).get_indexer(rows["face_id"].astype(str))
    s_ix = pd.Index(scen).get_indexer(rows["scenario_id"].astype(int))
    v_ix = np.where(kinds, 0, 1)
    counts = np.zeros((len(faces), len(scen), 2, len(values)))
    np.add.at(counts, (f_ix, s_ix, v_ix, u_ix), 1.0)
    first = rows.drop_duplicates("face_id").set_index("face_id")
    labels = {
        col: first.loc[list(faces), col].astype(str).to_numpy()
        for _, col in spec.axes
        if col in first.columns
    }
    return PairedData(faces, scen, values, counts, labels)


def _direction(mean_base: np.ndarray, mean_var: np.ndarray, spec: StatisticsSpec) -> list[str]:
    assert spec.variation is not None
    out = []
    for b, v in zip(mean_base, mean_var, strict=True):
        if np.isnan(b) or np.isnan(v) or b == v:
            out.append("tie")
        else:
            out.append(spec.variation.label if v > b else spec.variation.base_label)
    return out


def _ci(boot: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    return percentile_ci(boot, ci)


@dataclass(frozen=True)
class Bootstrap:
    """Face-level bootstrap settings (``analysis.bootstrap``)."""

    n_resamples: int = 1000
    ci: float = 0.95
    seed: int = 0


def gap_ci(
    counts: np.ndarray, boot_counts: np.ndarray, values: np.ndarray, ci: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Difference of the two groups' mean phi (second minus first) with its percentile CI.

    ``counts[..., 2, U]`` are the data, ``boot_counts[B, ..., 2, U]`` the bootstrap replicates
    (faces resampled: both groups of one replicate come from the same draw of faces).
    """
    m = _means(counts, values)
    bm = _means(boot_counts, values)
    diff = bm[..., 1] - bm[..., 0]
    lo, hi = _ci(diff.reshape(diff.shape[0], -1), ci)
    return m[..., 1] - m[..., 0], lo.reshape(m.shape[:-1]), hi.reshape(m.shape[:-1])


def group_gap(
    data: PairedData, column: str, first: str, second: str, boot: Bootstrap
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per scenario: mean phi of group ``second`` minus group ``first`` of a demographic column
    (all images), with its face-bootstrap CI."""
    w = face_weights(len(data.faces), boot.n_resamples, boot.seed)
    c = data.by_group(column, [first, second]).sum(axis=1)  # (S, 2, U)
    bc = data.by_group(column, [first, second], w).sum(axis=2)  # (B, S, 2, U)
    return gap_ci(c, bc, data.values, boot.ci)


def variation_bias(
    data: PairedData, benchmark: Benchmark, spec: StatisticsSpec, boot: Bootstrap
) -> pd.DataFrame:
    """Per scenario: KW of phi(base) vs phi(variation), the two means and their difference
    (``shift`` = variation - base) with bootstrap CIs, significance at ``spec.alpha`` and the
    direction (Tables 10-16)."""
    counts = data.weighted(None)  # (S, 2, U)
    h, p, _ = kruskal_counts(counts)
    means = _means(counts, data.values)  # (S, 2)
    w = face_weights(len(data.faces), boot.n_resamples, boot.seed)
    boot_counts = data.weighted(w)
    bm = _means(boot_counts, data.values)  # (B, S, 2)
    lo, hi = _ci(bm.reshape(bm.shape[0], -1), boot.ci)
    lo, hi = lo.reshape(means.shape), hi.reshape(means.shape)
    shift, shift_lo, shift_hi = gap_ci(counts, boot_counts, data.values, boot.ci)
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
    counts: np.ndarray, values: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Significant and significant-towards-the-variation flags from ``(..., S, 2, U)``."""
    _, p, _ = kruskal_counts(counts)
    m = _means(counts, values)
    sig = np.nan_to_num(p, nan=1.0) < alpha
    return sig, sig & (m[..., 1] > m[..., 0])


def halo_rate(
    data: PairedData, benchmark: Benchmark, spec: StatisticsSpec, boot: Bootstrap
) -> dict[str, float]:
    """The halo rate over the ``halo_tag`` scenarios with its bootstrap CI (faces resampled).

    A scenario counts when its variation bias is significant and the variation's images pick
    the stereotyped (positive) trait more often; the rate is over all tagged scenarios.
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
    sig, halo = _halo_counts(counts, data.values, spec.alpha)
    w = face_weights(len(data.faces), boot.n_resamples, boot.seed)
    _, bhalo = _halo_counts(data.weighted(w)[:, tagged], data.values, spec.alpha)
    rate_boot = bhalo.mean(axis=1)
    lo, hi = _ci(rate_boot[:, None], boot.ci)
    n = len(tagged)
    return {
        "n_scenarios": float(n),
        "n_significant": float(sig.sum()),
        "n_halo": float(halo.sum()),
        "n_opposite": float((sig & ~halo).sum()),
        "halo_rate": float(halo.sum() / n),
        "halo_rate_low": float(lo[0]),
        "halo_rate_high": float(hi[0]),
        "significant_rate": float(sig.sum() / n),
    }


def _axis_groups(data: PairedData, benchmark: Benchmark, column: str) -> list[str]:
    """The axis's groups in protocol order that have faces in the data."""
    present = set(data.labels.get(column, np.array([], dtype=str)))
    return [g for g in benchmark.demographics[column] if g in present]


def group_tests(
    data: PairedData, benchmark: Benchmark, spec: StatisticsSpec, boot: Bootstrap
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per scenario and axis of ``spec.group_tests``: KW of phi between the axis's groups (all
    images, both kinds), and the group means with bootstrap CIs (Tables 31-33)."""
    w = face_weights(len(data.faces), boot.n_resamples, boot.seed)
    tests, means = [], []
    for axis in spec.group_tests:
        col = spec.column(axis)
        groups = _axis_groups(data, benchmark, col)
        if not groups:
            continue
        c = data.by_group(col, groups).sum(axis=1)  # (S, G, U)
        h, p, k = kruskal_counts(c)
        m = _means(c, data.values)  # (S, G)
        bm = _means(data.by_group(col, groups, w).sum(axis=2), data.values)  # (B, S, G)
        lo, hi = _ci(bm.reshape(bm.shape[0], -1), boot.ci)
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
        m = _means(c, data.values)
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
        groups = _axis_groups(data, benchmark, col)
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
        groups = _axis_groups(data, benchmark, col)
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
