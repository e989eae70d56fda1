"""Statistics of the task-type protocols: REFLECT (win rates, MCQ distributions, relative mean
gap, Jensen-Shannon divergence, salary Gap%, cluster-robust OLS) and VIGNETTE (selection
frequency, add-one log-odds, PairComp, polarity, Fisher exact tests, the text-only vs
with-image z-test) and the left/right position bias that swapping the two orders exposes.

Formulas follow the papers' extractions (``shared/research/paper-focus-reflect.md`` Sec. 3,
``paper-vignette.md`` Sec. 4); each function's docstring names the section and states the
choices the papers leave open. Inputs are long tables of parsed answers (one row per answer;
invalid answers are rows with ``choice`` = ``invalid``); confidence intervals resample the
sampling unit (source photo, identity) with :func:`cluster_bootstrap_ci`.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from stylisticbias.families.tasks.analysis.exact import (
    pooled_fisher_p,
    stratified_exact_p,
    stratified_tables,
)

log = logging.getLogger(__name__)

INVALID = "invalid"


# ---- pairwise (REFLECT Sec. 3.1) --------------------------------------------------------------
def consolidate_pairs(answers: pd.DataFrame) -> pd.DataFrame:
    """One row per pair from its two orders: ``unit``, ``first``, ``second`` (the groups of the
    pair's identities), ``status`` (``consistent``, ``inconsistent``, ``invalid``) and
    ``winner`` (the chosen group of a consistent pair, else None).

    ``answers``: columns ``unit``, ``first``, ``second``, ``variant`` (0, 1) and ``choice``
    (``first``/``second``/``invalid``, the identity after undoing the swap).
    """
    wide = answers.pivot_table(
        index=["unit", "first", "second"], columns="variant", values="choice", aggfunc="first"
    ).reset_index()
    c0 = wide.get(0, pd.Series(INVALID, index=wide.index)).fillna(INVALID)
    c1 = wide.get(1, pd.Series(INVALID, index=wide.index)).fillna(INVALID)
    valid = (c0 != INVALID) & (c1 != INVALID)
    same = valid & (c0 == c1)
    status = np.where(same, "consistent", np.where(valid, "inconsistent", INVALID))
    winner = np.where(same, np.where(c0 == "first", wide["first"], wide["second"]), None)
    return pd.DataFrame(
        {
            "unit": wide["unit"],
            "first": wide["first"],
            "second": wide["second"],
            "status": status,
            "winner": winner,
        }
    )


def win_rates(pairs: pd.DataFrame, cross_group_only: bool = True) -> pd.Series:
    """WinRate(g): wins of group g / retained pairs in which g appears (REFLECT Sec. 3.1).

    Retained = consistent pairs (inconsistent and invalid pairs dropped, the paper's rule).
    ``cross_group_only`` (default) counts only pairs of two different groups: the formula as
    printed lets a same-group pair count as a win of its group (see the extraction's caveat);
    ``False`` is the literal version.
    """
    kept = pairs[pairs["status"] == "consistent"]
    if cross_group_only:
        kept = kept[kept["first"] != kept["second"]]
    first, second = kept["first"].to_numpy(object), kept["second"].to_numpy(object)
    appears = Counter(first)
    appears.update(s for f, s in zip(first, second) if s != f)  # a same-group pair: once
    wins = Counter(kept["winner"].to_numpy(object))  # a retained pair's winner is in it
    out = {g: wins[g] / appears[g] for g in sorted(appears)}
    return pd.Series(out, name="win_rate", dtype=float)


def pair_counts(pairs: pd.DataFrame) -> tuple[Counter, Counter]:
    """(retained r-vs-c pairs, those r won) per ordered ``(r, c)`` of two different groups
    (both orders of a pair count it: ``n[(r, c)] == n[(c, r)]``)."""
    kept = pairs[(pairs["status"] == "consistent") & (pairs["first"] != pairs["second"])]
    n: Counter = Counter()
    won: Counter = Counter()
    for f, s, w in zip(*(kept[c].to_numpy(object) for c in ("first", "second", "winner"))):
        n[(f, s)] += 1
        n[(s, f)] += 1
        won[(w, s if w == f else f)] += 1
    return n, won


def win_rate_matrix(pairs: pd.DataFrame) -> pd.DataFrame:
    """M[r, c]: the share of retained r-vs-c pairs in which r is chosen (M[r,c] + M[c,r] = 1)."""
    n, won = pair_counts(pairs)
    groups = sorted({r for r, _ in n})
    m = np.full((len(groups), len(groups)), np.nan)
    at = {g: i for i, g in enumerate(groups)}
    for (r, c), k in n.items():
        m[at[r], at[c]] = won[(r, c)] / k
    return pd.DataFrame(m, index=groups, columns=groups)


def inconsistent_rate(pairs: pd.DataFrame) -> float:
    """The share of pairs valid in both orders whose two orders disagree."""
    valid = pairs[pairs["status"] != INVALID]
    return float((valid["status"] == "inconsistent").mean()) if len(valid) else math.nan


def left_chosen(answers: pd.DataFrame) -> pd.Series:
    """Per answer: did it choose the identity in slot 1 (the left of a composite)?

    From the recorded positions when ``answers`` has them (``left_id`` and ``chosen_id``, the
    image ids of the left identity and of the one chosen), else from the order: slot 1 shows
    ``first`` in order 0 and ``second`` in order 1. Invalid answers are False."""
    if {"left_id", "chosen_id"} <= set(answers.columns):
        return (answers["choice"] != INVALID) & (answers["chosen_id"] == answers["left_id"])
    return ((answers["variant"] == 0) & (answers["choice"] == "first")) | (
        (answers["variant"] == 1) & (answers["choice"] == "second")
    )


def position_bias(answers: pd.DataFrame) -> tuple[float, float, int]:
    """(share of valid answers choosing slot 1 - 1/2, two-sided binomial p, n).

    ``answers``: ``variant`` and ``choice`` as for :func:`consolidate_pairs`, and the recorded
    positions where known (:func:`left_chosen`). With both orders asked equally often an
    unbiased judge picks slot 1 half the time whatever its preferences between identities.
    """
    valid = answers[answers["choice"] != INVALID]
    n, k = len(valid), int(left_chosen(valid).sum())
    if n == 0:
        return math.nan, math.nan, 0
    return k / n - 0.5, float(stats.binomtest(k, n, 0.5).pvalue), n


# ---- MCQ (REFLECT Sec. 3.2) -------------------------------------------------------------------
def option_distribution(answers: pd.DataFrame, group: str, labels: Sequence[str]) -> pd.DataFrame:
    """p_g(o) per group (rows) and the pooled p (row ``pooled``) over the valid answers.

    ``answers``: columns ``group`` (named by ``group``) and ``choice``.
    """
    valid = answers[answers["choice"].isin(labels)]
    counts = pd.crosstab(valid[group], valid["choice"]).reindex(columns=list(labels), fill_value=0)
    dist = counts.div(counts.sum(axis=1), axis=0)
    pooled = counts.sum(axis=0) / counts.values.sum()
    return pd.concat([dist, pooled.to_frame("pooled").T])


def jsd(p: Sequence[float], q: Sequence[float], base: float = 2.0) -> float:
    """Jensen-Shannon divergence JSD(p||q) = KL(p||m)/2 + KL(q||m)/2, m = (p+q)/2, in log
    ``base`` (REFLECT Sec. 3.2; its tables print it x 100, the base is not stated)."""
    a, b = np.asarray(p, float), np.asarray(q, float)
    a, b = a / a.sum(), b / b.sum()
    m = (a + b) / 2

    def kl(x: np.ndarray) -> float:
        nz = x > 0
        return float(np.sum(x[nz] * np.log(x[nz] / m[nz])))

    return (kl(a) + kl(b)) / 2 / math.log(base)


def encoded_mean(dist: Sequence[float], values: Sequence[float]) -> float:
    """mu_g = sum_o v(o) p_g(o)."""
    return float(np.dot(np.asarray(dist, float), np.asarray(values, float)))


def relative_mean_gap(
    dist: Sequence[float], ref: Sequence[float], values: Sequence[float]
) -> float:
    """Delta_g = (mu_g - mu_ref) / mu_ref (REFLECT Sec. 3.2; a fraction)."""
    mu, mu_ref = encoded_mean(dist, values), encoded_mean(ref, values)
    return (mu - mu_ref) / mu_ref


# ---- salary (REFLECT Sec. 3.3, 3.4) -----------------------------------------------------------
def gap_pct(mean: float, ref_mean: float) -> float:
    """Gap% = (mu / mu_ref - 1) x 100 (REFLECT Sec. 3.3)."""
    return (mean / ref_mean - 1.0) * 100.0


def cluster_ols(
    df: pd.DataFrame, formula: str, cluster: str, tests: Mapping[str, Sequence[str]]
) -> tuple[pd.DataFrame, dict[str, tuple[float, float]]]:
    """OLS with cluster-robust standard errors and joint Wald F tests (REFLECT Sec. 3.4).

    ``formula``: a patsy formula (``salary ~ C(race, Treatment('White')) * C(gender, ...)``);
    ``cluster``: the column of the cluster ids (the unit: occupation x biography x photo);
    ``tests``: name -> the coefficient names tested jointly equal to 0. Returns the
    coefficient table (``coef``, ``se``, ``pval``) and name -> (F, p).
    """
    import statsmodels.formula.api as smf

    groups = pd.factorize(df[cluster])[0]
    model = smf.ols(formula, data=df)
    k = model.exog.shape[1]
    if len(df) <= k or len(set(groups)) < 2:  # no residual degrees of freedom / one cluster
        log.warning(
            "cluster OLS %s: %d rows, %d clusters for %d coefficients: not estimable",
            formula,
            len(df),
            len(set(groups)),
            k,
        )
        nan = pd.Series(math.nan, index=model.exog_names)
        return pd.DataFrame({"coef": nan, "se": nan, "pval": nan}), dict.fromkeys(
            tests, (math.nan, math.nan)
        )
    fit = model.fit(cov_type="cluster", cov_kwds={"groups": groups})
    table = pd.DataFrame({"coef": fit.params, "se": fit.bse, "pval": fit.pvalues})
    out = {}
    for name, coefs in tests.items():
        r = np.zeros((len(coefs), len(fit.params)))
        for i, c in enumerate(coefs):
            r[i, list(fit.params.index).index(c)] = 1.0
        w = fit.wald_test(r, use_f=True, scalar=True)
        out[name] = (float(w.statistic), float(w.pvalue))
    return table, out


# ---- VIGNETTE (Sec. 4) ------------------------------------------------------------------------
def selection_frequency(options: pd.DataFrame) -> pd.Series:
    """S(i) = mean over activities of 100 x n_response(i, a) / n_option(i, a) (VIGNETTE 4.1).

    ``options``: one row per (question, identity shown as an option) with ``identity``,
    ``activity`` and ``selected`` (bool); invalid answers are left out beforehand.
    """
    per = options.groupby(["identity", "activity"])["selected"].mean() * 100.0
    return per.groupby(level="identity").mean().rename("selection_frequency")


def log_odds(options: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Add-one smoothed log-odds of identity i being chosen in activity a vs all other
    activities (VIGNETTE 4.2, natural log) with the Woolf (Wald) interval of the smoothed
    log-odds ratio, ``+- z sqrt(sum 1 / (cell + 1))``, and two p-values of the 2x2 table
    ``[[r_a, o_a - r_a], [r_not_a, o_not_a - r_not_a]]``: ``pval`` the exact test stratified by
    the sampling unit (``unit``: the instance whose photos every question of it shows;
    :func:`~.exact.stratified_exact_p`) and ``pval_fisher`` the paper's pooled Fisher exact
    test (equal to ``pval`` when there is one unit, or no ``unit`` column).
    """
    z = float(stats.norm.ppf(0.5 + level / 2))
    opts = options if "unit" in options.columns else options.assign(unit="")
    cells = opts.groupby(["identity", "activity", "unit"])["selected"].agg(["sum", "count"])
    rows = []
    for i, g in cells.groupby(level="identity"):
        per_unit = g.groupby(level="unit").sum()
        for a, ga in g.groupby(level="activity"):
            here = ga.droplevel(["identity", "activity"]).reindex(per_unit.index, fill_value=0)
            rest = per_unit - here
            tables = stratified_tables(here["sum"], here["count"], rest["sum"], rest["count"])
            (r_a, f_a), (r_n, f_n) = tables.sum(axis=0)
            lor = math.log(((r_a + 1) / (f_a + 1)) / ((r_n + 1) / (f_n + 1)))
            se = math.sqrt(1 / (r_a + 1) + 1 / (f_a + 1) + 1 / (r_n + 1) + 1 / (f_n + 1))
            rows.append(
                (
                    i,
                    a,
                    lor,
                    lor - z * se,
                    lor + z * se,
                    stratified_exact_p(tables),
                    pooled_fisher_p(tables),
                    int(r_a + f_a),
                )
            )
    return pd.DataFrame(
        rows,
        columns=[
            "identity",
            "activity",
            "log_odds",
            "ci_low",
            "ci_high",
            "pval",
            "pval_fisher",
            "n",
        ],
    )


def pair_comp(options: pd.DataFrame, paper_tests: bool = False) -> pd.DataFrame:
    """PairComp(i1, i2) = S(i1 | paired with i2) - S(i1 | not paired with i2), proportions in
    [-1, 1], pooled over activities (VIGNETTE 4.3), with two p-values: ``pval_fisher`` the
    paper's Fisher exact test of the pooled
    ``[[sel_with, n_with - sel_with], [sel_without, n_without - sel_without]]``, and ``pval``
    the test named in ``test``: by default the instance-clustered test of the same difference
    (:func:`cluster_diff_test`, clusters = ``unit``, the instance whose photos every question
    of it shows), with ``paper_tests`` the pooled Fisher p (``pval`` = ``pval_fisher``).

    ``options``: ``identity``, ``partner`` (the other identity of the question), ``selected``,
    ``unit`` (absent: one unit, the clustered test is undefined).

    Why not a stratified (Mantel-Haenszel / conditional) test: within an instance the with-i2
    answers all face i2's one photo, so its appeal shifts the stratum's own odds ratio; a
    random effect of mean 0 across instances that a common-odds-ratio test reads as signal.
    """
    opts = options if "unit" in options.columns else options.assign(unit="")
    rows = []
    for i1, g in opts.groupby("identity"):
        # per unit x partner: selections and appearances of i1
        per = g.groupby(["unit", "partner"])["selected"].agg(["sum", "count"])
        sel = per["sum"].unstack("partner", fill_value=0)
        shown = per["count"].unstack("partner", fill_value=0)
        for i2 in sorted(set(g["partner"])):
            xw, nw = sel[i2].to_numpy(float), shown[i2].to_numpy(float)
            xo, no = sel.sum(axis=1).to_numpy(float) - xw, shown.sum(axis=1).to_numpy(float) - nw
            if no.sum() == 0:
                continue
            sw, sn, n_w, n_o = int(xw.sum()), int(xo.sum()), int(nw.sum()), int(no.sum())
            p_f = float(stats.fisher_exact([[sw, n_w - sw], [sn, n_o - sn]]).pvalue)
            if paper_tests:
                p, test = p_f, PAPER_FISHER
            else:
                p, test = cluster_diff_test(xw, nw, xo, no)[2], CLUSTER_T
            rows.append((i1, i2, sw / n_w - sn / n_o, p, p_f, test, n_w))
    return pd.DataFrame(
        rows, columns=["identity", "partner", "pair_comp", "pval", "pval_fisher", "test", "n"]
    )


def polarity(
    x_high: Sequence[int] | int,
    n_high: Sequence[int] | int,
    x_low: Sequence[int] | int,
    n_low: Sequence[int] | int,
) -> tuple[float, float, float]:
    """(S_high - S_low in percent, stratified exact p, the paper's pooled Fisher p) for one
    identity and trait pair or taxonomy (VIGNETTE 4.4): x = selections, n = appearances as an
    option, one entry per sampling unit (a scalar each: one unit, the two p-values equal).
    The stratified test (:func:`~.exact.stratified_exact_p`) conditions on each unit's
    margins, so units (photos) that make an identity chosen more often for every term do not
    count as evidence of a valence difference."""
    tables = stratified_tables(
        np.atleast_1d(x_high), np.atleast_1d(n_high), np.atleast_1d(x_low), np.atleast_1d(n_low)
    )
    (xh, fh), (xl, fl) = tables.sum(axis=0)
    s = 100.0 * xh / (xh + fh) - 100.0 * xl / (xl + fl)
    return float(s), stratified_exact_p(tables), pooled_fisher_p(tables)


def two_proportion_z(x1: int, n1: int, x2: int, n2: int) -> tuple[float, float]:
    """The pooled two-proportion z-test of VIGNETTE 4.5 (with image vs text only):
    z = (p1 - p2) / sqrt(p (1 - p) (1/n1 + 1/n2)), p = (x1 + x2) / (n1 + n2); two-sided p."""
    p1, p2, p = x1 / n1, x2 / n2, (x1 + x2) / (n1 + n2)
    se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    if se == 0:
        return 0.0, 1.0
    z = (p1 - p2) / se
    return z, float(2 * stats.norm.sf(abs(z)))


# ---- intervals --------------------------------------------------------------------------------
def cluster_bootstrap_ci(
    df: pd.DataFrame,
    unit: str,
    statistic: Callable[[pd.DataFrame], float],
    n_boot: int = 500,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of ``statistic`` over ``n_boot`` resamples of whole units (the
    sampling unit: source photo, identity), drawn with replacement."""
    rng = np.random.default_rng(seed)
    units = df[unit].unique()
    parts = {u: g for u, g in df.groupby(unit)}
    vals = []
    for _ in range(n_boot):
        pick = rng.choice(units, size=len(units), replace=True)
        sample = pd.concat([parts[u] for u in pick], ignore_index=True)
        v = statistic(sample)
        if not math.isnan(v):
            vals.append(v)
    if not vals:
        return math.nan, math.nan
    a = (1 - level) / 2
    lo, hi = np.quantile(vals, [a, 1 - a])
    return float(lo), float(hi)


def unit_bootstrap_ci(
    counts: np.ndarray,
    statistic: Callable[[np.ndarray], float],
    n_boot: int = 500,
    seed: int = 0,
    level: float = 0.95,
    method: str = "bca",
    expanded: bool = True,
) -> tuple[float, float]:
    """Bootstrap interval of ``statistic(summed counts)`` resampling units with replacement.

    ``counts``: one row per sampling unit (source photo, identity, image pair) of additive
    sufficient statistics (wins and appearances per group, option counts, sums of numbers);
    a resample is a multinomial weight per unit, so the interval is the one
    :func:`cluster_bootstrap_ci` gives for a statistic of the pooled counts, without copying
    the data ``n_boot`` times.

    ``method``: ``"bca"`` (default; bias-corrected and accelerated, Efron 1987: the bias
    correction ``z0`` from the share of resamples below the estimate, mid-ranks for ties; the
    acceleration from the leave-one-unit-out jackknife -- SciPy's ``bootstrap(method="BCa")``)
    or ``"percentile"``. ``expanded`` (default) widens the tail level for the number of units
    ``n`` (Hesterberg 2015, *The American Statistician* 69(4), the expanded percentile
    interval): ``alpha' / 2 = Phi(-sqrt(n / (n - 1)) t_{n-1, 1 - alpha/2})``, the plug-in
    bootstrap's variance divisor ``n`` and normal tails replaced by ``n - 1`` and Student's t,
    as a cluster-robust t interval with ``G - 1`` degrees of freedom does. The task statistics
    are ratios of unit totals (wins / appearances, mean option values, mean salaries) over
    40-50 units: their percentile intervals undercovered (0.93 for win rates over 1,600
    intervals) from the ratio's small-sample bias and skew (corrected by BCa) and the plug-in
    variance (corrected by the expansion); see ``reports/bench/calibration.json``.
    """
    if method not in ("bca", "percentile"):
        raise ValueError(f"method must be 'bca' or 'percentile'; got {method!r}")
    rng = np.random.default_rng(seed)
    c = np.asarray(counts, dtype=np.float64)
    u = len(c)
    flat = c.reshape(u, -1)
    w = rng.multinomial(u, np.full(u, 1.0 / u), size=n_boot)
    vals = np.array([statistic(s) for s in w @ flat], dtype=np.float64)
    vals = vals[~np.isnan(vals)]
    if not len(vals):
        return math.nan, math.nan
    alpha = (1 - level) / 2
    if expanded and u > 1:
        alpha = float(stats.norm.cdf(-math.sqrt(u / (u - 1)) * stats.t.ppf(1 - alpha, u - 1)))
    q = np.array([alpha, 1 - alpha])
    if method == "bca":
        q = _bca_levels(vals, flat, statistic, q)
    lo, hi = np.quantile(vals, q)
    return float(lo), float(hi)


def _bca_levels(
    vals: np.ndarray, flat: np.ndarray, statistic: Callable[[np.ndarray], float], q: np.ndarray
) -> np.ndarray:
    """The BCa-adjusted quantile levels of the tail levels ``q`` (percentile levels when the
    estimate or the jackknife is undefined)."""
    total = flat.sum(axis=0)
    est = statistic(total)
    if math.isnan(est):
        return q
    below = (np.sum(vals < est) + np.sum(vals <= est)) / (2 * len(vals))
    below = min(max(below, 0.5 / len(vals)), 1 - 0.5 / len(vals))
    z0 = stats.norm.ppf(below)
    jack = np.array([statistic(total - row) for row in flat], dtype=np.float64)
    jack = jack[~np.isnan(jack)]
    d = jack.mean() - jack if len(jack) else np.zeros(1)
    ss = float(np.sum(d**2))
    accel = float(np.sum(d**3)) / (6 * ss**1.5) if ss > 0 else 0.0
    lo = float(stats.norm.ppf(q[0]))  # from the small tail: finite where 1 - q[0] rounds to 1
    z = np.array([lo, -lo])
    out = stats.norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
    return out if np.isfinite(out).all() else q


# ---- valid inference: clustered tests and chance levels ---------------------------------------
#: the test labels of the tested task tables (the ``test`` column)
PAPER_WALD_F = "paper: cluster-robust Wald F"
WILD_CLUSTER = "wild cluster bootstrap (restricted, Rademacher/Webb) of the CR1 Wald F"
PAPER_FISHER = "paper: pooled Fisher exact"
PAPER_Z = "paper: pooled two-proportion z"
CLUSTER_T = "cluster-robust t (CR2, Bell-McCaffrey df)"
_WEBB = np.array([-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)])


def cluster_weights(rng: np.random.Generator, n_clusters: int, n_boot: int) -> np.ndarray:
    """Wild-bootstrap weights, one per cluster and draw (``n_clusters x n_boot``): Rademacher
    (+-1), or Webb's six-point weights below 12 clusters (MacKinnon & Webb: Rademacher has
    only 2^G distinct draws)."""
    if n_clusters < 12:
        return _WEBB[rng.integers(0, 6, size=(n_clusters, n_boot))]
    return rng.choice(np.array([-1.0, 1.0]), size=(n_clusters, n_boot))


def wild_cluster_wald(
    y: np.ndarray,
    x: np.ndarray,
    clusters: np.ndarray,
    restrictions: Mapping[str, Sequence[int]],
    n_boot: int = 999,
    seed: int = 0,
    weights: np.ndarray | None = None,
) -> dict[str, tuple[float, float, int]]:
    """The CR1 cluster-robust Wald F of ``beta[idx] = 0`` per restriction, with its p-value
    from the wild cluster bootstrap with restricted residuals (WCR; Cameron, Gelbach & Miller
    2008, MacKinnon & Webb 2018): ``name -> (F, p, number of restrictions)``.

    ``x``: the design (rows x coefficients, full column rank); ``clusters``: one id per row;
    ``restrictions``: name -> the column indices tested jointly equal to 0. ``F`` is
    statsmodels' ``OLS(...).fit(cov_type="cluster").wald_test(use_f=True)`` statistic (CR1:
    ``G/(G-1) (N-1)/(N-k)``); its p-value is the share of the ``n_boot`` bootstrap statistics
    at least as large, ``(1 + #{F* >= F}) / (1 + n_boot)``, where each draw multiplies the
    restricted model's residuals by one weight per cluster (:func:`cluster_weights`, or the
    given ``weights``: clusters x draws). Unlike the F(q, G - 1) reference, it stays at its
    level with few clusters and several restrictions (9 over 48 source photos over-rejected
    about 3x). Vectorised: every draw's statistic is computed from per-cluster score sums
    (cost ``G x k x n_boot``, independent of the number of rows).
    """
    y = np.asarray(y, np.float64)
    x = np.asarray(x, np.float64)
    g, (n, k) = len(np.unique(np.asarray(clusters))), x.shape
    if n <= k or g < 2 or np.linalg.matrix_rank(x.T @ x) < k:
        log.warning(
            "wild cluster Wald: %d rows, %d clusters, %d coefficients: not estimable", n, g, k
        )
        return {name: (math.nan, math.nan, len(idx)) for name, idx in restrictions.items()}
    if weights is None:
        weights = cluster_weights(np.random.default_rng(seed), g, n_boot)
    v = np.asarray(weights, np.float64)
    out = {}
    for name, (f_obs, f_star) in wild_cluster_draws(y, x, clusters, restrictions, v).items():
        p = (1 + int(np.sum(f_star >= f_obs * (1 - 1e-12)))) / (1 + len(f_star))
        out[name] = (f_obs, p, len(restrictions[name]))
    return out


def wild_cluster_draws(
    y: np.ndarray,
    x: np.ndarray,
    clusters: np.ndarray,
    restrictions: Mapping[str, Sequence[int]],
    weights: np.ndarray,
) -> dict[str, tuple[float, np.ndarray]]:
    """name -> (the observed CR1 Wald F, its bootstrap draws) of :func:`wild_cluster_wald`
    (one draw per column of ``weights``, clusters in ``np.unique`` order)."""
    y = np.asarray(y, np.float64)
    x = np.asarray(x, np.float64)
    cid, inv = np.unique(np.asarray(clusters), return_inverse=True)
    g, (n, k) = len(cid), x.shape
    a = np.linalg.inv(x.T @ x)
    c = g / (g - 1) * (n - 1) / (n - k)

    def by_cluster(m: np.ndarray) -> np.ndarray:  # rows -> per-cluster sums
        out = np.zeros((g, *m.shape[1:]))
        np.add.at(out, inv, m)
        return out

    beta = a @ (x.T @ y)
    s_u = by_cluster(x * (y - x @ beta)[:, None])  # G x k unrestricted scores
    h = by_cluster(x[:, :, None] * x[:, None, :])  # G x k x k: X_g' X_g
    v = np.asarray(weights, np.float64)
    out = {}
    for name, idx in restrictions.items():
        idx = list(idx)
        q = len(idx)
        ra = a[idx]  # R A (q x k)
        theta = beta[idx]
        qu = s_u @ ra.T  # G x q
        f_obs = float(theta @ np.linalg.solve(c * qu.T @ qu, theta)) / q
        keep = [j for j in range(k) if j not in set(idx)]
        xr = x[:, keep]
        br = np.linalg.lstsq(xr, y, rcond=None)[0]
        s = by_cluster(x * (y - xr @ br)[:, None])  # G x k restricted scores
        ra_s = s @ ra.T  # G x q: R A s_g
        l_g = np.einsum("qk,gkl->gql", ra, h)  # G x q x k: R A H_g
        f_star = np.empty(v.shape[1])
        for lo in range(0, v.shape[1], 256):  # chunks bound the memory (G x q x 256)
            vb = v[:, lo : lo + 256]
            w = a @ (s.T @ vb)  # k x b: A T v
            num = ra @ (s.T @ vb)  # q x b: R beta*
            qg = ra_s[:, :, None] * vb[:, None, :] - np.einsum("gqk,kb->gqb", l_g, w)
            cov = c * np.einsum("gqb,grb->bqr", qg, qg)
            sol = np.linalg.solve(cov, num.T[:, :, None])[:, :, 0]
            f_star[lo : lo + vb.shape[1]] = np.einsum("bq,bq->b", num.T, sol) / q
        out[name] = (f_obs, f_star)
    return out


def factor_design(
    factors: Mapping[str, Sequence[str]],
    refs: Mapping[str, str],
    interact: Sequence[str] = (),
    fixed: Sequence[str] | None = None,
) -> tuple[np.ndarray, dict[str, list[int]]]:
    """A design matrix with sum-to-zero (deviation) coding and its column blocks.

    ``factors``: name -> the level of each row; ``refs``: name -> the level left out of the
    coding (its deviation is minus the sum of the others'); ``interact``: two factor names
    whose product columns are added; ``fixed``: a nuisance factor coded as treatment dummies
    (occupation when pooled). Returns ``x`` (an intercept first) and block name -> columns:
    with deviation coding a main-effect block is 0 exactly when that factor's marginal means
    (averaged over the other factor's levels) are equal, the type III hypothesis.
    """
    cols: list[np.ndarray] = []
    blocks: dict[str, list[int]] = {}
    n = len(next(iter(factors.values())))
    cols.append(np.ones(n))
    coded: dict[str, np.ndarray] = {}
    for name, vals in factors.items():
        vals = np.asarray(vals, dtype=object)
        seen = sorted(set(vals))
        ref = refs[name] if refs[name] in seen else seen[0]
        levels = [lv for lv in seen if lv != ref]
        m = np.stack([(vals == lv).astype(float) - (vals == ref) for lv in levels], 1)
        coded[name] = m
        blocks[name] = list(range(len(cols), len(cols) + m.shape[1]))
        cols += list(m.T)
    if interact:
        a, b = interact
        prod = np.einsum("ni,nj->nij", coded[a], coded[b]).reshape(n, -1)
        blocks[f"{a} x {b}"] = list(range(len(cols), len(cols) + prod.shape[1]))
        cols += list(prod.T)
    if fixed is not None:
        vals = np.asarray(fixed, dtype=object)
        cols += [(vals == lv).astype(float) for lv in sorted(set(vals))[1:]]
    return np.stack(cols, 1), blocks


def cluster_diff_test(
    x1: np.ndarray, n1: np.ndarray, x2: np.ndarray, n2: np.ndarray
) -> tuple[float, float, float]:
    """(p1 - p2, t, two-sided p) of two pooled shares ``p = sum x / sum n`` whose counts come
    per cluster (one entry each in ``x1``, ``n1``, ``x2``, ``n2``; a cluster may hold answers of
    both arms), with the bias-reduced cluster-robust variance and small-sample degrees of
    freedom: ``t`` is the OLS coefficient of the arm indicator over the answers with CR2
    errors (Bell & McCaffrey 2002: each cluster's residuals scaled by ``(I - H_gg)^(-1/2)``)
    and ``p`` is from Student's t on the Bell-McCaffrey (Satterthwaite) degrees of freedom
    under working independence (Imbens & Kolesar 2016). Answers of one instance share its
    photos, so they are not independent; the pooled tests (Fisher, z) treat them as if they
    were. The earlier CR1 with ``G - 1`` degrees of freedom rejected a true null in 0.069 of
    text-vs-image rows with 12 instances of strongly varying appeal (docs: the family's README).

    Closed form for the two-means model: ``H`` is ``1/S1`` within arm 1 and ``1/S2`` within
    arm 2, so cluster ``g``'s adjusted score is ``r_g = c1_g (x1_g - p1 n1_g) / S1 - c2_g
    (x2_g - p2 n2_g) / S2`` with ``c_g = (1 - n_g / S)^(-1/2)``; ``V = sum r_g^2``; the
    degrees of freedom are ``tr(M)^2 / tr(M^2)`` with ``M = diag(n1 c1^2 / S1^2 + n2 c2^2 /
    S2^2) - a a' / S1 - b b' / S2``, ``a = n1 c1 / S1``, ``b = n2 c2 / S2``."""
    x1, n1, x2, n2 = (np.asarray(a, np.float64) for a in (x1, n1, x2, n2))
    keep = (n1 + n2) > 0
    x1, n1, x2, n2 = x1[keep], n1[keep], x2[keep], n2[keep]
    g, s1, s2 = len(x1), n1.sum(), n2.sum()
    if g < 2 or not s1 or not s2:
        return math.nan, math.nan, math.nan
    p1, p2 = x1.sum() / s1, x2.sum() / s2
    d = float(p1 - p2)
    with np.errstate(divide="ignore"):
        c1, c2 = (1 - n1 / s1) ** -0.5, (1 - n2 / s2) ** -0.5
    if not (np.isfinite(c1).all() and np.isfinite(c2).all()):  # one cluster holds a whole arm
        return d, math.nan, math.nan
    r = c1 * (x1 - p1 * n1) / s1 - c2 * (x2 - p2 * n2) / s2
    var = float(np.sum(r**2))
    if var <= 0:
        return d, math.nan, 1.0 if d == 0 else math.nan
    a, b = n1 * c1 / s1, n2 * c2 / s2
    m = np.diag(n1 * c1**2 / s1**2 + n2 * c2**2 / s2**2) - np.outer(a, a) / s1
    m -= np.outer(b, b) / s2
    df = float(np.trace(m) ** 2 / np.sum(m * m))  # tr(M^2) = sum of squares (M symmetric)
    t = d / math.sqrt(var)
    return d, t, float(2 * stats.t.sf(abs(t), df))


def permutation_chance_jsd(
    unit: np.ndarray,
    group: np.ndarray,
    option: np.ndarray,
    n_groups: int,
    n_options: int,
    n_perm: int = 200,
    seed: int = 0,
) -> np.ndarray:
    """The chance level of each group's JSD to the pooled distribution: its mean over
    ``n_perm`` permutations of the group labels among the answers of each unit (source photo),
    i.e. the JSD expected when the group makes no difference, with the data's sample sizes
    and clustering. ``group``/``option``: integer codes per valid answer; returns one value per
    group (bits)."""
    rng = np.random.default_rng(seed)
    codes = pd.factorize(np.asarray(unit))[0]
    order = np.argsort(codes, kind="stable")
    codes_s, group_s, option_s = codes[order], np.asarray(group)[order], np.asarray(option)[order]
    total = np.bincount(option_s, minlength=n_options).astype(float)
    pooled = total / total.sum()
    acc = np.zeros(n_groups)
    for _ in range(n_perm):
        perm = np.lexsort((rng.random(len(codes_s)), codes_s))  # shuffle within each unit
        counts = np.zeros((n_groups, n_options))
        np.add.at(counts, (group_s[perm], option_s), 1)
        acc += jsd_rows(counts, pooled)
    return acc / n_perm


def jsd_rows(counts: np.ndarray, pooled: np.ndarray) -> np.ndarray:
    """:func:`jsd` (bits) of each row of ``counts`` (normalised) against ``pooled``; NaN for
    an empty row."""
    tot = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = counts / tot
        m = (p + pooled) / 2
        kl_p = np.where(p > 0, p * np.log(p / m), 0.0).sum(axis=1)
        kl_q = np.where(pooled > 0, pooled * np.log(pooled / m), 0.0).sum(axis=1)
    out = (kl_p + kl_q) / 2 / math.log(2)
    return np.where(tot[:, 0] > 0, out, np.nan)


def jsd_interval(
    counts: np.ndarray,
    statistic: Callable[[np.ndarray], float],
    n_boot: int = 500,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """The unit-bootstrap interval of a JSD (``statistic`` of the summed ``counts``, one row
    per unit as for :func:`unit_bootstrap_ci`): the *basic* (reverse percentile) interval
    ``[2 J - q_hi, 2 J - q_lo]`` with the small-sample expansion of :func:`unit_bootstrap_ci`,
    clipped at 0. The plug-in JSD is biased upward by about its chance level (the JSD of two
    samples of one distribution; ~0.02 bits at 48 answers per group over six options), as
    large as the effects; a percentile interval carries that bias twice (the estimate and its
    resamples are both biased) and undercovers, the basic interval subtracts it once."""
    rng = np.random.default_rng(seed)
    flat = np.asarray(counts, np.float64).reshape(len(counts), -1)
    u = len(flat)
    est = statistic(flat.sum(axis=0))
    w = rng.multinomial(u, np.full(u, 1.0 / u), size=n_boot)
    vals = np.array([statistic(s) for s in w @ flat], dtype=np.float64)
    vals = vals[~np.isnan(vals)]
    if not len(vals) or math.isnan(est):
        return math.nan, math.nan
    alpha = (1 - level) / 2
    if u > 1:
        alpha = float(stats.norm.cdf(-math.sqrt(u / (u - 1)) * stats.t.ppf(1 - alpha, u - 1)))
    q_lo, q_hi = np.quantile(vals, [alpha, 1 - alpha])
    return max(0.0, float(2 * est - q_hi)), max(0.0, float(2 * est - q_lo))


def ratio_of_means_interval(
    per_unit: np.ndarray, n_boot: int = 500, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Symmetric bootstrap-t interval of ``(sum a / sum b) / (sum c / sum d)`` over units (the
    columns of ``per_unit``: ``a, b, c, d``, one row per unit), studentized on the log scale.

    The ratio of two groups' means (salary Gap% + 1, the MCQ relative mean gap + 1) with
    units of unequal size and per-unit effects. Percentile intervals undercovered (0.926 over
    2,700 Gap% intervals, 48 source photos) because the plug-in standard error is itself noisy
    with few clusters; the equal-tailed bootstrap-t still undercovered with 20 photos and
    skewed photo effects (0.92-0.93 over 3,600 intervals per design), its tails being the
    noisiest quantiles of ``t*``. The symmetric one holds 0.945-0.962 over the same designs
    (docs/statistics.md). Per resample (units drawn with replacement) ``t* = (log r* - log r)
    / se*``, with ``se`` the cluster-robust linearisation ``sqrt(G/(G-1) sum_j (a_j/A - b_j/B
    - c_j/C + d_j/D)^2)``; with ``q`` the ``level`` quantile of ``|t*|`` the interval is
    ``exp(log r -+ q se)``. NaN when a total is 0."""
    x = np.asarray(per_unit, np.float64).reshape(-1, 4)
    g = len(x)
    tot = x.sum(axis=0)
    if g < 2 or (tot <= 0).any():
        return math.nan, math.nan
    sign = np.array([1.0, -1.0, -1.0, 1.0])

    def log_r(t: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(t) @ sign

    def se(w: np.ndarray, t: np.ndarray) -> np.ndarray:  # w: draws x units, t: draws x 4
        infl = (x[None, :, :] / t[:, None, :]) @ sign  # draws x units
        infl = infl - (w * infl).sum(axis=1, keepdims=True) / g  # centre (weighted mean)
        return np.sqrt(g / (g - 1) * (w * infl**2).sum(axis=1))

    est = float(log_r(tot))
    se0 = float(se(np.ones((1, g)), tot[None])[0])
    rng = np.random.default_rng(seed)
    w = rng.multinomial(g, np.full(g, 1.0 / g), size=n_boot).astype(np.float64)
    t_b = w @ x
    ok = (t_b > 0).all(axis=1)
    w, t_b = w[ok], t_b[ok]
    s_b = se(w, t_b)
    ok = s_b > 0
    tstar = (log_r(t_b[ok]) - est) / s_b[ok]
    if not len(tstar) or se0 == 0:
        return math.exp(est), math.exp(est)
    q = float(np.quantile(np.abs(tstar), level))
    return math.exp(est - q * se0), math.exp(est + q * se0)
