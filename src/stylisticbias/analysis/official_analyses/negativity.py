"""The released code's negativity asymmetry (``negativity_asymmetry.py``): five positive/negative
variation pairs, per face |Delta_neg| - |Delta_pos|, one-sided Wilcoxon, BH over the pairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.bootstrap import percentile_ci
from stylisticbias.analysis.metrics import CellSums
from stylisticbias.analysis.official import adjust_untested_as_one
from stylisticbias.analysis.official_analyses.effects import cell_ratio
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.significance import TIE_DECIMALS


@dataclass(frozen=True)
class NegativityPair:
    """A positive/negative variation pair of the negativity-asymmetry test."""

    label: str
    positive: tuple[str, str]  # (attribute, value)
    negative: tuple[str, str]
    gender: str | None = None  # only faces of this gender


#: The released code's five pairs (``negativity_asymmetry.py``), in our attribute names.
NEGATIVITY_PAIRS: tuple[NegativityPair, ...] = (
    NegativityPair(
        "Formal vs Worn",
        ("Fashion style", "Formal / Evening wear"),
        ("Fashion style", "Worn / Distressed clothing"),
    ),
    NegativityPair(
        "Business vs Worn",
        ("Fashion style", "Professional / Business formal"),
        ("Fashion style", "Worn / Distressed clothing"),
    ),
    NegativityPair(
        "Smart Casual vs Streetwear",
        ("Fashion style", "Smart casual"),
        ("Fashion style", "Streetwear"),
    ),
    NegativityPair(
        "Hair: Slicked vs Messy", ("Hair style", "Slicked back"), ("Hair style", "Messy")
    ),
    NegativityPair(
        "Makeup vs Acne (female)", ("Makeup", "Heavy"), ("Skin irreg.", "Acne"), "female"
    ),
)


def negativity_asymmetry(
    gender_sums: CellSums, s: AnalysisSettings, pairs: tuple[NegativityPair, ...] = NEGATIVITY_PAIRS
) -> pd.DataFrame:
    """Per pair: faces with both variations, median |Delta| of each, their ratio (face-bootstrap
    CI), one-sided Wilcoxon of |Delta_neg| - |Delta_pos| > 0, BH over the pairs."""
    keys = gender_sums.keys
    attr, val = keys["attribute"].astype(str).to_numpy(), keys["value"].astype(str).to_numpy()
    gen = keys["gender"].astype(str).to_numpy()
    rng = np.random.default_rng(s.seed)
    rows = []
    for pr in pairs:

        def face_mean(av: tuple[str, str], pr: NegativityPair = pr) -> np.ndarray:
            m = (attr == av[0]) & (val == av[1])
            if pr.gender is not None:
                m &= gen == pr.gender
            return cell_ratio(gender_sums.num[:, m].sum(axis=1), gender_sums.den[:, m].sum(axis=1))

        pos, neg = face_mean(pr.positive), face_mean(pr.negative)
        both = np.isfinite(pos) & np.isfinite(neg)
        # rounded as every test here rounds (equal shifts tie whatever the summation order)
        ap = np.round(np.abs(pos[both]), TIE_DECIMALS)
        an = np.round(np.abs(neg[both]), TIE_DECIMALS)
        n = int(both.sum())
        p = stat = ratio = lo = hi = np.nan
        mp = float(np.median(ap)) if n else np.nan
        mn = float(np.median(an)) if n else np.nan
        if n:
            ratio = mn / mp if mp > 0 else np.nan
        if n >= 3 and np.any(an - ap != 0):
            r = stats.wilcoxon(an - ap, zero_method="wilcox", alternative="greater")
            stat, p = float(r.statistic), float(r.pvalue)
        if n >= 2 and s.n_resamples:
            idx = rng.integers(0, n, size=(s.n_resamples, n))
            bp, bn = np.median(ap[idx], axis=1), np.median(an[idx], axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = np.where(bp > 0, bn / np.where(bp > 0, bp, 1.0), np.nan)
            l_, h_ = percentile_ci(boot[:, None], s.ci)
            lo, hi = float(l_[0]), float(h_[0])
        rows.append(
            {
                "pair": pr.label,
                "positive_variation": " / ".join(pr.positive),
                "negative_variation": " / ".join(pr.negative),
                "n_faces": n,
                "median_abs_pos": mp,
                "median_abs_neg": mn,
                "ratio": ratio,
                "ci_low": lo,
                "ci_high": hi,
                "statistic": stat,
                "pval": p,
            }
        )
    out = pd.DataFrame(rows)
    out["pval_corr"] = adjust_untested_as_one(
        out["pval"].to_numpy(), out["n_faces"].to_numpy() > 0, s.correction
    )
    return out
