"""The variation bias of each scenario (Kruskal-Wallis, base vs variation images; Tables 10-16)
and the halo rate over the tagged scenarios, each with face-bootstrap CIs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stylisticbias.analysis.bootstrap import face_weights, percentile_ci
from stylisticbias.benchmark import Benchmark
from stylisticbias.benchmark.sections import StatisticsSpec
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.paired_variation.analysis.counts import (
    Bootstrap,
    PairedData,
    gap_ci,
    group_means,
    kruskal_counts,
)


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
    data: PairedData, benchmark: Benchmark, spec: StatisticsSpec, boot: Bootstrap
) -> pd.DataFrame:
    """Per scenario: KW of phi(base) vs phi(variation), the two means and their difference
    (``shift`` = variation - base) with bootstrap CIs, significance at ``spec.alpha`` and the
    direction (Tables 10-16)."""
    counts = data.weighted(None)  # (S, 2, U)
    h, p, _ = kruskal_counts(counts)
    means = group_means(counts, data.values)  # (S, 2)
    w = face_weights(len(data.faces), boot.n_resamples, boot.seed)
    boot_counts = data.weighted(w)
    bm = group_means(boot_counts, data.values)  # (B, S, 2)
    lo, hi = percentile_ci(bm.reshape(bm.shape[0], -1), boot.ci)
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
    m = group_means(counts, values)
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
    lo, hi = percentile_ci(rate_boot[:, None], boot.ci)
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
