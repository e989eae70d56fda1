"""Phi as per-face count tensors, and what every paired-variation test is built on:
Kruskal-Wallis H from frequency tables, group means, the face-bootstrap settings and CIs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.bootstrap import percentile_ci
from stylisticbias.benchmark import Benchmark
from stylisticbias.benchmark.sections import StatisticsSpec
from stylisticbias.errors import StylisticBiasError

#: Decimals phi is rounded to before its distinct values are counted (k/12 is not exact).
PHI_DECIMALS = 9
#: Decimals a value derived from phi (a person's mean or difference) is rounded to before its
#: distinct values are counted: phi is already rounded, so (a + b) / 2 of two rounded k/12 can
#: differ in the 10th decimal from the same mean of two other ones.
DERIVED_DECIMALS = 6


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


def signed_rank_counts(counts: np.ndarray, diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilcoxon signed-rank test (two-sided) from frequency tables of paired differences.

    ``counts[..., k]`` is how often the difference ``diffs[k]`` occurs (one per person; counts
    may be bootstrap frequencies). Zero differences are dropped (``zero_method="wilcox"``), tied
    absolute differences get mid-ranks, and p is the normal approximation with the tie
    correction and no continuity correction: ``scipy.stats.wilcoxon(d, method="approx")`` on
    the expanded data. Returns the sum of the positive ranks ``r_plus`` and p; both are NaN
    with no non-zero difference.
    """
    counts = np.asarray(counts, dtype=np.float64)
    d = np.round(np.asarray(diffs, dtype=np.float64), DERIVED_DECIMALS)
    mags, inv = np.unique(np.abs(d), return_inverse=True)
    onehot = (inv[:, None] == np.arange(len(mags))[None, :]) & (d != 0)[:, None]
    t = counts @ onehot.astype(np.float64)  # (..., J) ties per |difference|
    pos = counts @ (onehot & (d > 0)[:, None]).astype(np.float64)  # (..., J) positive ones
    rank = np.cumsum(t, axis=-1) - t + (t + 1.0) / 2.0
    r_plus = (pos * rank).sum(axis=-1)
    n = t.sum(axis=-1)
    mean = n * (n + 1.0) / 4.0
    var = n * (n + 1.0) * (2.0 * n + 1.0) / 24.0 - (t**3 - t).sum(axis=-1) / 48.0
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(var > 0, (r_plus - mean) / np.sqrt(np.where(var > 0, var, 1.0)), np.nan)
    p = np.where(np.isnan(z), np.nan, 2.0 * stats.norm.sf(np.abs(np.nan_to_num(z))))
    return np.where(n > 0, r_plus, np.nan), np.minimum(p, 1.0)


def value_counts(x: np.ndarray, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Frequency tables of one value per person: ``x[f, s]`` (NaN = no value) with person
    ``f`` in group ``group[f]`` (-1 = in none) -> ``counts[s, g, u]`` and the sorted distinct
    ``values[u]`` (rounded to :data:`DERIVED_DECIMALS`)."""
    x = np.round(np.asarray(x, dtype=np.float64), DERIVED_DECIMALS)
    ok = ~np.isnan(x) & (np.asarray(group) >= 0)[:, None]
    values, u_ix = np.unique(x[ok], return_inverse=True)
    f_ix, s_ix = np.nonzero(ok)
    counts = np.zeros((x.shape[1], n_groups, len(values)))
    np.add.at(counts, (s_ix, np.asarray(group)[f_ix], u_ix), 1.0)
    return counts, values


def t_halfwidth(x: np.ndarray, group: np.ndarray, n_groups: int, ci: float) -> np.ndarray:
    """Half-width of the Student-t interval of a mean of one value per person.

    ``x[f, s]`` is person ``f``'s value in scenario ``s`` (NaN = none), ``group[f]`` its group
    (-1 = in none): per scenario and group ``t_{ci, n - 1} * sd / sqrt(n)`` over the persons
    with a value (sample SD, ddof 1), ``(S, G)``; NaN with fewer than two persons.
    """
    x = np.asarray(x, dtype=np.float64)
    out = np.full((x.shape[1], n_groups), np.nan)
    for g in range(n_groups):
        v = x[np.asarray(group) == g]
        n = (~np.isnan(v)).sum(axis=0)
        ok = n >= 2
        if not ok.any():
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.nansum(v, axis=0) / np.where(n > 0, n, 1)
            ss = np.nansum((v - mean) ** 2, axis=0)
            sd = np.sqrt(ss / np.where(ok, n - 1, 1))
            q = stats.t.ppf(0.5 + ci / 2.0, np.where(ok, n - 1, 1))
            out[:, g] = np.where(ok, q * sd / np.sqrt(np.where(ok, n, 1)), np.nan)
    return out


def group_means(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
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

    def person_phi(self) -> np.ndarray:
        """phi of every person's image of each kind: ``(F, S, 2)`` (mean over the kind's
        images; NaN where the person has no image of that kind with a valid phi)."""
        n = self.counts.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            tot = (self.counts * self.values).sum(axis=-1)
            return np.where(n > 0, tot / np.where(n > 0, n, 1.0), np.nan)

    def person_means(self) -> np.ndarray:
        """One value per person and scenario: the mean phi of the person's images (both kinds
        where both have a valid phi): ``(F, S)``, NaN where neither has one."""
        phi = self.person_phi()
        n = (~np.isnan(phi)).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, np.nansum(phi, axis=-1) / np.where(n > 0, n, 1), np.nan)

    def person_differences(self) -> np.ndarray:
        """One value per person and scenario: phi(variation) - phi(base), ``(F, S)``; NaN
        where either image lacks a valid phi."""
        phi = self.person_phi()
        return phi[..., 1] - phi[..., 0]

    def group_index(self, column: str, groups: Sequence[str]) -> np.ndarray:
        """Per face: the index of its group in ``groups`` (-1 = in none of them)."""
        lab = self.labels[column]
        out = np.full(len(self.faces), -1)
        for g, name in enumerate(groups):
            out[lab == name] = g
        return out


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
    m = group_means(counts, values)
    bm = group_means(boot_counts, values)
    diff = bm[..., 1] - bm[..., 0]
    lo, hi = percentile_ci(diff.reshape(diff.shape[0], -1), ci)
    return m[..., 1] - m[..., 0], lo.reshape(m.shape[:-1]), hi.reshape(m.shape[:-1])


def axis_groups(data: PairedData, benchmark: Benchmark, column: str) -> list[str]:
    """The axis's groups in protocol order that have faces in the data."""
    present = set(data.labels.get(column, np.array([], dtype=str)))
    return [g for g in benchmark.demographics[column] if g in present]
