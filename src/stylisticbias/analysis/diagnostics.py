"""Response diagnostics from the judge's answer records: position bias, letter bias, invalid rates.

Which rows count: a model's drawn/generated responses (``seed >= 1`` with a ``choice``) when it
has any; otherwise its ``seed == 0`` exact-expectation rows, whose ``p_pos``/``p_neg`` are used as
fractional responses. Invalid = ``choice == "invalid"`` (or ``p_invalid + p_undecided``).

- position bias: share of valid responses that pick the option written *first*;
- letter bias: share of valid responses that pick the protocol's first letter (``(a)``);
both against 0.5 (the paper's four orderings balance pole, position and letter). Responses of
one face (and of each of its photos) are correlated, so the face is the unit of every test and
interval: the share is the pooled ratio ``sum_f first_f / sum_f valid_f``, its standard error the
face-clustered (CR1) linearisation ``sqrt(F/(F-1) sum_f (first_f - share valid_f)^2) / sum_f
valid_f``, and the p-value (of share = 0.5) and the CI come from a **symmetric studentized
face bootstrap** (bootstrap-t: each resample of faces re-studentized by its own clustered SE),
which holds its level when the faces' tendencies are skewed or their answer counts unequal.
Without resamples (``n_resamples = 0``) the p-value is the clustered t test on ``F - 1`` degrees
of freedom and the share CIs are NaN. The invalid rates' CIs need no resamples
(:func:`clustered_rate_ci`): a face-clustered t interval on the log scale whose degrees of
freedom account for unequal face sizes and for heavy-tailed (rare, face-concentrated) invalid
answers. (Before, the p-value was a Wilcoxon signed-rank test of the per-face shares, which
tests their pseudo-median, not the pooled share: under face tendencies that are skewed with mean
0 it rejected 27% at alpha 0.05; the invalid rates' percentile CI covered 0.85 at 40 faces, the
log-scale bootstrap-t that followed it 0.91-0.93 at 15-40 faces; docs/statistics.md.)
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.analysis.bootstrap import face_weights
from stylisticbias.analysis.metrics import face_codes
from stylisticbias.benchmark import Benchmark

log = logging.getLogger(__name__)

JUDGMENT_COLUMNS = [
    "face_id",
    "scenario_id",
    "ordering",
    "seed",
    "choice",
    "p_pos",
    "p_neg",
    "p_invalid",
    "p_undecided",
]


#: the fractional-response columns, read only for a model without drawn responses
EXACT_COLUMNS = ("p_pos", "p_neg", "p_invalid", "p_undecided")

_CHOICES = ("positive", "negative", "invalid")


@dataclass
class ResponseSums:
    """Per-model face-level sums of fractional responses."""

    model: str
    faces: pd.Index
    first: np.ndarray  # (faces,) chose the first-written option
    letter_a: np.ndarray  # (faces,) chose letter (a)
    valid: np.ndarray  # (faces,)
    invalid_fs: np.ndarray  # (faces, scenarios) invalid mass
    total_fs: np.ndarray  # (faces, scenarios) responses
    scenarios: np.ndarray
    n_responses: int


def response_sums(judgments: pd.DataFrame, benchmark: Benchmark, model: str) -> ResponseSums:
    """Reduce one model's judgment rows to face-level sums (vectorised)."""
    j = judgments
    drawn = (j["seed"].to_numpy() >= 1) & j["choice"].notna().to_numpy()
    if drawn.any():
        if not drawn.all():  # (every row drawn, the usual case: no copy of millions of rows)
            j = j[drawn]
        c = j["choice"]
        if isinstance(c.dtype, pd.CategoricalDtype):  # drawn answers: counts, one pass
            counted = _counted_sums(j, benchmark, model)
            if counted is not None:
                return counted
        if isinstance(c.dtype, pd.CategoricalDtype):  # compare the categories, not every row
            cats, codes = np.asarray(c.cat.categories.astype(str)), c.cat.codes.to_numpy()
            wpos, wneg, winv = ((cats == v)[codes].astype(np.float64) for v in _CHOICES)
        else:
            ch = c.astype(str).to_numpy()
            wpos, wneg, winv = ((ch == v).astype(np.float64) for v in _CHOICES)
    else:
        j = j[j["seed"].to_numpy() == 0]
        if j.empty:
            raise ValueError(
                f"judgments of model {model!r}: no drawn (seed >= 1) or exact (seed 0) rows"
            )
        wpos = j["p_pos"].to_numpy(dtype=np.float64)
        wneg = j["p_neg"].to_numpy(dtype=np.float64)
        winv = j["p_invalid"].to_numpy(dtype=np.float64) + j["p_undecided"].to_numpy(
            dtype=np.float64
        )
    ids = [o.id for o in benchmark.orderings]
    first_pos = np.zeros(max(ids) + 1, dtype=bool)
    a_pos = np.zeros(max(ids) + 1, dtype=bool)
    for o in benchmark.orderings:
        first_pos[o.id] = o.positive_position == 1
        a_pos[o.id] = o.positive_is_first_letter
    order = j["ordering"].to_numpy(dtype=np.int64)
    first = np.where(first_pos[order], wpos, wneg)
    letter_a = np.where(a_pos[order], wpos, wneg)
    fc, faces = face_codes(j["face_id"])
    nf = len(faces)
    scen = np.asarray([s.id for s in benchmark.scenarios])
    sidx = np.searchsorted(scen, j["scenario_id"].to_numpy())
    fs = fc * len(scen) + sidx
    shape = (nf, len(scen))
    return ResponseSums(
        model=model,
        faces=faces,
        first=np.bincount(fc, weights=first, minlength=nf),
        letter_a=np.bincount(fc, weights=letter_a, minlength=nf),
        valid=np.bincount(fc, weights=wpos + wneg, minlength=nf),
        invalid_fs=np.bincount(fs, weights=winv, minlength=nf * len(scen)).reshape(shape),
        total_fs=np.bincount(fs, weights=wpos + wneg + winv, minlength=nf * len(scen)).reshape(
            shape
        ),
        scenarios=scen,
        n_responses=len(j),
    )


def _counted_sums(j: pd.DataFrame, benchmark: Benchmark, model: str) -> ResponseSums | None:
    """:func:`response_sums` of drawn answers (``choice`` categorical) from one ``bincount`` of
    face x scenario x ordering x choice: each response weighs 0 or 1, so every sum is a count
    (the float sums of the row-wise path equal these counts exactly). None where the count
    array would be large (many faces or ordering ids): the row-wise path then."""
    c = j["choice"]
    cats = np.asarray(c.cat.categories.astype(str))
    choice = np.full(len(cats) + 1, len(_CHOICES), dtype=np.int64)  # other answers: weight 0
    for i, v in enumerate(_CHOICES):
        choice[:-1][cats == v] = i
    fc, faces = face_codes(j["face_id"])
    nf, nc = len(faces), len(_CHOICES) + 1
    scen = np.asarray([s.id for s in benchmark.scenarios])
    no = max(o.id for o in benchmark.orderings) + 1
    if nf * len(scen) * no * nc > 50_000_000:
        return None
    order = j["ordering"].to_numpy(dtype=np.int64)
    sidx = np.searchsorted(scen, j["scenario_id"].to_numpy())
    if len(order) and (order.min() < 0 or order.max() >= no or sidx.max() >= len(scen)):
        return None  # ids outside the protocol: the row-wise path (and its error)
    key = fc * len(scen)
    key += sidx
    key *= no
    key += order
    key *= nc
    key += choice[c.cat.codes.to_numpy()]
    counts = np.bincount(key, minlength=nf * len(scen) * no * nc)
    counts = counts.reshape(nf, len(scen), no, nc).astype(np.float64)
    pos, neg, inv = counts[..., 0], counts[..., 1], counts[..., 2]
    first_pos = np.zeros(no, dtype=bool)
    a_pos = np.zeros(no, dtype=bool)
    for o in benchmark.orderings:
        first_pos[o.id] = o.positive_position == 1
        a_pos[o.id] = o.positive_is_first_letter
    return ResponseSums(
        model=model,
        faces=faces,
        first=np.where(first_pos, pos, neg).sum(axis=(1, 2)),
        letter_a=np.where(a_pos, pos, neg).sum(axis=(1, 2)),
        valid=(pos + neg).sum(axis=(1, 2)),
        invalid_fs=inv.sum(axis=2),
        total_fs=(pos + neg + inv).sum(axis=2),
        scenarios=scen,
        n_responses=len(j),
    )


def clustered_ratio_se(num: np.ndarray, den: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ratio, se)`` per column of face-level sums ``num``, ``den`` (faces x cells): the pooled
    ratio and its face-clustered (CR1) linearised standard error (faces with ``den = 0`` are not
    clusters of that cell)."""
    tot = den.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num.sum(axis=0) / tot
        k = (den > 0).sum(axis=0).astype(np.float64)
        e = num - r * den
        se = np.sqrt(k / (k - 1) * (e**2).sum(axis=0)) / tot
    return r, np.where(k > 1, se, np.nan)


def clustered_rate_ci(num: np.ndarray, den: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` per column of face-level sums ``num``, ``den`` (faces x cells): the interval
    of the pooled rate ``r = sum num / sum den`` (an invalid-answer rate), the face the cluster.

    ``r exp(-t_lo se / r)`` to ``r exp(t_hi se / r)``, ``se`` the face-clustered CR1 SE of
    :func:`clustered_ratio_se` (log scale: rates near 0 are right-skewed). The critical values
    are Student t quantiles (level ``ci``, two-sided) on Satterthwaite degrees of freedom of the
    clustered variance, under a working model of independent faces whose residual
    ``e_f = num_f - r den_f`` has variance ``lam_f = den_f^2 tau^2 + den_f r (1 - r)`` (``tau^2``
    the between-face variance of the rates, by weighted moments, floored at 0):

    * lower bound: ``nu_S = (sum lam)^2 / sum lam^2`` (few or unequal faces);
    * upper bound: ``nu_K = nu_S 2 / max(kappa - 1, 2)``, ``kappa`` the (small-sample corrected)
      kurtosis of the standardised residuals ``e_f / sqrt(lam_f)``, which also counts how
      unstable the SE is when a few faces carry most invalid answers: a sample that missed those
      faces understates both the rate and its SE, so the upper bound is the one at risk.

    Both are at least 1; the upper bound is at most 1. No invalid answer at all (``r = 0``):
    ``[0, 1 - (alpha/2)^(1/F)]``, the exact bound when the F faces are the independent units.
    Fewer than 2 faces with answers: NaN. Measured coverage in docs/statistics.md.
    """
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be in (0, 1); got {ci}")
    r, se = clustered_ratio_se(num, den)
    has = den > 0
    k = has.sum(axis=0).astype(np.float64)
    tot = den.sum(axis=0)
    half = (1.0 - ci) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(has, num / np.where(has, den, 1.0), 0.0)
        between = (den / tot * (share - r) ** 2).sum(axis=0) - r * (1.0 - r) * k / tot
        lam = np.where(has, den**2 * np.maximum(between, 0.0) + den * r * (1.0 - r), 0.0)
        nu_s = lam.sum(axis=0) ** 2 / (lam**2).sum(axis=0)
        used = has & (lam > 0)
        u2 = np.where(used, (num - r * den) ** 2 / np.where(used, lam, 1.0), 0.0)
        kappa = used.sum(axis=0) * (u2**2).sum(axis=0) / u2.sum(axis=0) ** 2
        g2 = ((k + 1.0) * (kappa - 3.0) + 6.0) * (k - 1.0) / ((k - 2.0) * (k - 3.0))
        kappa = np.where(k > 3, 3.0 + g2, kappa)  # the unbiased-under-normality kurtosis
        nu_k = nu_s * 2.0 / np.maximum(kappa - 1.0, 2.0)
        t_lo = stats.t.ppf(1.0 - half, np.maximum(np.nan_to_num(nu_s, nan=1.0), 1.0))
        t_hi = stats.t.ppf(1.0 - half, np.maximum(np.nan_to_num(nu_k, nan=1.0), 1.0))
        lo = r * np.exp(-t_lo * se / r)
        hi = np.minimum(r * np.exp(t_hi * se / r), 1.0)
    flat = se == 0  # every face at the same rate (r > 0): nothing to widen
    lo, hi = np.where(flat, r, lo), np.where(flat, r, hi)
    zero = r == 0
    lo = np.where(zero, 0.0, lo)
    hi = np.where(zero, 1.0 - half ** (1.0 / np.maximum(k, 1.0)), hi)
    bad = ~(k > 1) | ~np.isfinite(r)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def _boot_t(num: np.ndarray, den: np.ndarray, w: np.ndarray, r: np.ndarray) -> np.ndarray:
    """|t*| of each face resample (B x cells): (ratio* - ratio) / se*, se* the resample's own
    clustered linearised SE. A resample whose statistic is undefined (a zero SE) counts as +inf
    when the ratio moved and 0 when it did not; a resample with no rows of a cell is NaN."""
    a, b = w @ num, w @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        rb = a / b
        v = (w @ (num**2) - 2.0 * rb * (w @ (num * den)) + rb**2 * (w @ (den**2))) / b**2
        sd = np.sqrt(np.maximum(v, 0.0))
        t = np.abs(rb - r) / sd
    moved = rb != r
    t = np.where(np.isfinite(t), t, np.where(moved, np.inf, 0.0))
    return np.where(b > 0, t, np.nan)


def _studentized(
    num: np.ndarray, den: np.ndarray, w: np.ndarray | None, ci: float, null: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(ratio, lo, hi, p)`` per column: the symmetric face bootstrap-t interval (``ratio +-
    q se``, ``q`` the ``ci`` quantile of |t*|) and the p-value of ``ratio = null`` (share of
    |t*| >= |t|, counting the observed one), or without resamples the clustered t test on
    ``F - 1`` df and NaN bounds."""
    r, se = clustered_ratio_se(num, den)
    n = len(r)
    lo, hi, p = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    k = (den > 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t0 = np.abs(r - null) / se if null is not None else np.full(n, np.nan)
    t0 = np.where((se == 0) & (r != null), np.inf, t0)  # every face the same, not at the null
    if w is None:
        ok = k > 1
        p[ok] = 2.0 * stats.t.sf(t0[ok], k[ok] - 1)
        return r, lo, hi, p
    tb = _boot_t(num, den, w, r)
    fin = np.isfinite(tb)
    with np.errstate(invalid="ignore"):
        q = np.array(
            [np.quantile(tb[fin[:, c], c], ci) if fin[:, c].any() else np.nan for c in range(n)]
        )
        lo, hi = np.clip(r - q * se, 0.0, None), np.clip(r + q * se, None, 1.0)
        if null is not None:
            nb = fin.sum(axis=0)
            p = (1.0 + (fin & (tb >= t0 - 1e-12 * np.abs(t0))).sum(axis=0)) / (nb + 1.0)
            p = np.where(np.isfinite(t0) | np.isinf(t0), p, np.nan)
            p = np.where(k > 1, p, np.nan)
    return r, lo, hi, p


def _share_test(
    num: np.ndarray, den: np.ndarray, w: np.ndarray | None, ci: float
) -> tuple[float, float, float, float]:
    share, lo, hi, p = (float(x[0]) for x in _studentized(num[:, None], den[:, None], w, ci, 0.5))
    if not np.isfinite(p):
        log.warning("bias test: fewer than 2 faces or no deviation from 0.5: not tested")
    return share, lo, hi, p


def bias_tables(
    sums: Iterable[ResponseSums], *, n_resamples: int, ci: float, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(position_bias, letter_bias, invalid_rates)`` frames over models.

    position/letter: ``model, share, bias (= share - 0.5), ci_low, ci_high, pval, n, n_faces``
    (``n`` = valid responses); invalid: ``model, scenario_id, invalid_rate, ci_low, ci_high,
    n, n_faces`` plus one ``scenario_id = 0`` row per model for all scenarios pooled.
    """
    pos, let, inv = [], [], []
    for s in sums:
        w = face_weights(len(s.faces), n_resamples, seed) if n_resamples else None
        nf = int((s.valid > 0).sum())
        for rows, num in ((pos, s.first), (let, s.letter_a)):
            share, lo, hi, p = _share_test(num, s.valid, w, ci)
            rows.append((s.model, share, share - 0.5, lo, hi, p, float(s.valid.sum()), nf))
        num = np.column_stack([s.invalid_fs.sum(axis=1), s.invalid_fs])
        den = np.column_stack([s.total_fs.sum(axis=1), s.total_fs])
        sids = np.array([0, *s.scenarios.tolist()])
        asked = den.sum(axis=0) > 0  # scenarios this model was asked
        num, den, sids = num[:, asked], den[:, asked], sids[asked]
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = num.sum(0) / den.sum(0)
        lo, hi = clustered_rate_ci(num, den, ci)
        for i, sid in enumerate(sids):
            inv.append(
                (
                    s.model,
                    int(sid),
                    rate[i],
                    lo[i],
                    hi[i],
                    float(den[:, i].sum()),
                    int((den[:, i] > 0).sum()),
                )
            )
    cols = ["model", "share", "bias", "ci_low", "ci_high", "pval", "n", "n_faces"]
    return (
        pd.DataFrame(pos, columns=cols),
        pd.DataFrame(let, columns=cols),
        pd.DataFrame(
            inv,
            columns=["model", "scenario_id", "invalid_rate", "ci_low", "ci_high", "n", "n_faces"],
        ),
    )
