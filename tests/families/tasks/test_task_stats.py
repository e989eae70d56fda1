"""REFLECT and VIGNETTE statistics against SciPy / statsmodels and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from scipy.spatial.distance import jensenshannon
from statsmodels.stats.proportion import proportions_ztest

from stylisticbias.families.tasks.analysis import stats as ts


def _pair_answers(rows):
    """rows: (unit, first, second, order-0 choice, order-1 choice)."""
    out = []
    for unit, f, s, c0, c1 in rows:
        out.append((unit, f, s, 0, c0))
        out.append((unit, f, s, 1, c1))
    return pd.DataFrame(out, columns=["unit", "first", "second", "variant", "choice"])


ROWS = [
    ("p1", "W", "B", "first", "first"),  # W wins
    ("p1", "W", "A", "second", "second"),  # A wins
    ("p1", "B", "A", "first", "second"),  # inconsistent
    ("p2", "W", "B", "second", "second"),  # B wins
    ("p2", "W", "A", "first", "invalid"),  # invalid
    ("p2", "B", "A", "first", "first"),  # B wins
    ("p3", "W", "W", "first", "first"),  # same group
]


def test_consolidate_and_win_rates() -> None:
    pairs = ts.consolidate_pairs(_pair_answers(ROWS))
    st = dict(zip(zip(pairs["unit"], pairs["first"], pairs["second"]), pairs["status"]))
    assert st[("p1", "B", "A")] == "inconsistent" and st[("p2", "W", "A")] == "invalid"
    wr = ts.win_rates(pairs)
    # retained cross-group pairs: W>B, A>W, B>W, B>A
    assert wr["W"] == pytest.approx(1 / 3) and wr["B"] == pytest.approx(2 / 3)
    assert wr["A"] == pytest.approx(1 / 2)
    literal = ts.win_rates(pairs, cross_group_only=False)
    assert literal["W"] == pytest.approx(2 / 4)  # the same-group pair counts as a W win
    m = ts.win_rate_matrix(pairs)
    assert m.loc["B", "W"] == pytest.approx(0.5) and m.loc["W", "B"] == pytest.approx(0.5)
    assert m.loc["A", "W"] == 1.0 and m.loc["W", "A"] == 0.0 and math.isnan(m.loc["A", "A"])
    assert ts.inconsistent_rate(pairs) == pytest.approx(1 / 6)


def test_position_bias_against_binomtest() -> None:
    ans = _pair_answers(
        [("u", "x", "y", "first", "second")] * 30 + [("u", "x", "y", "first", "first")] * 10
    )
    bias, p, n = ts.position_bias(ans)
    # slot 1 chosen: 40 (order 0, "first") + 30 (order 1, "second") of 80
    assert n == 80 and bias == pytest.approx(70 / 80 - 0.5)
    assert p == pytest.approx(stats.binomtest(70, 80, 0.5).pvalue)


def test_option_distribution_jsd_and_mean_gap() -> None:
    df = pd.DataFrame(
        {"race": ["W"] * 4 + ["B"] * 4, "choice": ["a", "b", "b", "c", "a", "a", "invalid", "c"]}
    )
    dist = ts.option_distribution(df, "race", ["a", "b", "c"])
    assert dist.loc["W"].tolist() == pytest.approx([0.25, 0.5, 0.25])
    assert dist.loc["B"].tolist() == pytest.approx([2 / 3, 0, 1 / 3])
    assert dist.loc["pooled"].tolist() == pytest.approx([3 / 7, 2 / 7, 2 / 7])
    for base in (2.0, math.e):
        want = jensenshannon(dist.loc["B"], dist.loc["pooled"], base=base) ** 2
        assert ts.jsd(dist.loc["B"], dist.loc["pooled"], base) == pytest.approx(want, abs=1e-12)
    values = [10_000, 30_000, 50_000]
    mu_w = 0.25 * 10_000 + 0.5 * 30_000 + 0.25 * 50_000
    mu_b = (2 * 10_000 + 50_000) / 3
    got = ts.relative_mean_gap(dist.loc["B"], dist.loc["W"], values)
    assert got == pytest.approx((mu_b - mu_w) / mu_w)
    assert ts.gap_pct(110.0, 100.0) == pytest.approx(10.0)


def test_cluster_ols_equals_statsmodels_and_recovers_a_planted_gap() -> None:
    rng = np.random.default_rng(0)
    n_units, reps = 200, 4
    unit = np.repeat(np.arange(n_units), reps)
    race = rng.choice(["White", "Black", "Asian"], size=len(unit))
    gender = rng.choice(["Female", "Male"], size=len(unit))
    u_eff = rng.normal(0, 5000, n_units)[unit]
    salary = 60_000 + 3000 * (gender == "Male") + u_eff + rng.normal(0, 2000, len(unit))
    df = pd.DataFrame({"unit": unit, "race": race, "gender": gender, "salary": salary})
    f = "salary ~ C(race, Treatment('White')) + C(gender, Treatment('Female'))"
    male = "C(gender, Treatment('Female'))[T.Male]"
    races = ["C(race, Treatment('White'))[T.Asian]", "C(race, Treatment('White'))[T.Black]"]
    table, tests = ts.cluster_ols(df, f, "unit", {"gender": [male], "race": races})
    ref = smf.ols(f, df).fit(cov_type="cluster", cov_kwds={"groups": df["unit"]})
    assert table["coef"].to_numpy() == pytest.approx(ref.params.to_numpy())
    assert table["se"].to_numpy() == pytest.approx(ref.bse.to_numpy())
    w = ref.f_test(f"{races[0]} = 0, {races[1]} = 0")
    assert tests["race"][0] == pytest.approx(float(w.fvalue))
    assert tests["race"][1] == pytest.approx(float(w.pvalue))
    assert abs(table.loc[male, "coef"] - 3000) < 3 * table.loc[male, "se"]
    assert tests["gender"][1] < 1e-6 and tests["race"][1] > 0.001


def _options():
    # question q: two identities shown, one selected
    rows = []
    rng = np.random.default_rng(1)
    for q in range(300):
        act = ["cook", "drive", "teach"][q % 3]
        i1, i2 = rng.choice(["x", "y", "z"], size=2, replace=False)
        p1 = 0.8 if (i1 == "x" and act == "cook") else 0.5
        pick1 = rng.random() < p1
        rows.append((q, act, i1, i2, pick1))
        rows.append((q, act, i2, i1, not pick1))
    return pd.DataFrame(rows, columns=["question", "activity", "identity", "partner", "selected"])


def test_selection_frequency_log_odds_pair_comp() -> None:
    opt = _options()
    s = ts.selection_frequency(opt)
    want = opt.groupby(["identity", "activity"])["selected"].mean().groupby("identity").mean()
    assert s.to_numpy() == pytest.approx(want.to_numpy() * 100)
    lo = ts.log_odds(opt)
    row = lo[(lo["identity"] == "x") & (lo["activity"] == "cook")].iloc[0]
    g = opt[opt["identity"] == "x"]
    r_a = g[g["activity"] == "cook"]["selected"].sum()
    o_a = (g["activity"] == "cook").sum()
    r_n, o_n = g["selected"].sum() - r_a, len(g) - o_a
    assert row["log_odds"] == pytest.approx(
        math.log(((r_a + 1) / (o_a - r_a + 1)) / ((r_n + 1) / (o_n - r_n + 1)))
    )
    fisher = stats.fisher_exact([[r_a, o_a - r_a], [r_n, o_n - r_n]]).pvalue
    assert row["pval_fisher"] == pytest.approx(fisher)
    assert row["pval"] == pytest.approx(fisher)  # no unit column: one stratum
    assert row["log_odds"] > 0.3 and row["pval"] < 0.05  # the planted preference
    # the Woolf interval of the smoothed table: statsmodels' Table2x2 on the add-one counts
    from statsmodels.stats.contingency_tables import Table2x2

    t = Table2x2(np.array([[r_a + 1, o_a - r_a + 1], [r_n + 1, o_n - r_n + 1]], float))
    assert t.log_oddsratio == pytest.approx(row["log_odds"])
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(t.log_oddsratio_confint(0.05))
    pc = ts.pair_comp(opt)
    r = pc[(pc["identity"] == "x") & (pc["partner"] == "y")].iloc[0]
    w, wo = g[g["partner"] == "y"]["selected"], g[g["partner"] != "y"]["selected"]
    assert r["pair_comp"] == pytest.approx(w.mean() - wo.mean())


def test_polarity_and_z_test_against_scipy_statsmodels() -> None:
    s, p, p_fisher = ts.polarity(30, 50, 18, 50)
    assert s == pytest.approx(24.0)
    assert p == p_fisher == pytest.approx(stats.fisher_exact([[30, 20], [18, 32]]).pvalue)
    # two units: the pooled Fisher p of the summed table, the stratified p of the strata
    s2, p2, f2 = ts.polarity([20, 10], [25, 25], [12, 6], [25, 25])
    assert s2 == pytest.approx(24.0) and f2 == pytest.approx(p_fisher)
    assert p2 != pytest.approx(f2)
    z, pz = ts.two_proportion_z(45, 100, 30, 90)
    zr, pr = proportions_ztest([45, 30], [100, 90])
    assert z == pytest.approx(zr) and pz == pytest.approx(pr)
    assert ts.two_proportion_z(0, 10, 0, 10) == (0.0, 1.0)


def test_cluster_bootstrap_ci_resamples_units() -> None:
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"unit": np.repeat(np.arange(60), 5), "y": rng.normal(size=300)})
    df["y"] += np.repeat(rng.normal(0, 1, 60), 5)  # strong within-unit correlation
    lo, hi = ts.cluster_bootstrap_ci(df, "unit", lambda d: float(d["y"].mean()), 400, 0)
    naive = 1.96 * df["y"].std() / math.sqrt(len(df))
    assert lo < df["y"].mean() < hi
    assert (hi - lo) / 2 > 1.5 * naive  # clustered: wider than the naive interval


def test_unit_bootstrap_equals_resampling_the_rows() -> None:
    """Multinomial unit weights give the same interval as resampling units' rows (same draws)."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"unit": np.repeat(np.arange(40), 3), "y": rng.normal(size=120)})
    per = df.groupby("unit")["y"].agg(["sum", "count"]).to_numpy()
    got = ts.unit_bootstrap_ci(
        per, lambda s: s[0] / s[1], 300, 7, method="percentile", expanded=False
    )
    # reference: the same multinomial draws applied by repeating rows
    w = np.random.default_rng(7).multinomial(40, np.full(40, 1 / 40), size=300)
    vals = [np.repeat(df["y"].to_numpy().reshape(40, 3), wi, axis=0).mean() for wi in w]
    assert got == pytest.approx(tuple(np.quantile(vals, [0.025, 0.975])))


def _scipy_unit_ci(per: np.ndarray, level: float) -> tuple[float, float]:
    """SciPy's BCa interval of sum(col 0) / sum(col 1) over resampled unit indices."""

    def stat(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        s = per[idx].sum(axis=-2)
        return s[..., 0] / s[..., 1]

    res = stats.bootstrap(
        (np.arange(len(per)),),
        stat,
        n_resamples=40_000,
        method="BCa",
        confidence_level=level,
        vectorized=True,
        random_state=0,
    )
    return res.confidence_interval.low, res.confidence_interval.high


@pytest.mark.parametrize("expanded", [False, True])
def test_unit_bootstrap_bca_against_scipy(expanded: bool) -> None:
    """BCa over units equals SciPy's BCa (independent resamples: Monte Carlo tolerance); the
    expanded interval is SciPy's at the widened level; both differ from the percentile one."""
    rng = np.random.default_rng(5)
    n = 30
    per = np.column_stack([rng.exponential(3.0, n) ** 2, rng.integers(1, 4, n)]).astype(float)
    ratio = lambda s: s[0] / s[1]  # noqa: E731
    got = ts.unit_bootstrap_ci(per, ratio, 40_000, 1, expanded=expanded)
    level = 0.95
    if expanded:
        level = 1 - 2 * stats.norm.cdf(-math.sqrt(n / (n - 1)) * stats.t.ppf(0.975, n - 1))
        assert level > 0.95
    ref = _scipy_unit_ci(per, level)
    width = ref[1] - ref[0]
    assert got[0] == pytest.approx(ref[0], abs=0.02 * width)
    assert got[1] == pytest.approx(ref[1], abs=0.02 * width)
    pct = ts.unit_bootstrap_ci(per, ratio, 40_000, 1, method="percentile", expanded=expanded)
    assert abs(pct[0] - got[0]) > 0.03 * width  # a skewed ratio: BCa moves the interval
    with pytest.raises(ValueError, match="bca"):
        ts.unit_bootstrap_ci(per, ratio, 10, 1, method="studentized")


def test_unit_bootstrap_with_very_few_units_stays_an_interval() -> None:
    """Two units: the expanded level is ~1e-72 (t with 1 df), BCa must not turn it into NaN."""
    ratio = lambda s: s[0] / s[1] if s[1] else math.nan  # noqa: E731
    lo, hi = ts.unit_bootstrap_ci(np.array([[1.0, 1.0], [0.0, 1.0]]), ratio, 50, 0)
    assert 0.0 <= lo <= hi <= 1.0
    assert ts.unit_bootstrap_ci(np.array([[0.0, 0.0]]), ratio, 20, 0) == (
        pytest.approx(math.nan, nan_ok=True),
        pytest.approx(math.nan, nan_ok=True),
    )


def test_cluster_ols_without_residual_degrees_of_freedom_is_nan_not_a_crash() -> None:
    """One observation per cluster and as many coefficients as rows: statsmodels divides by
    zero; the table reports NaN (a sweep of 8 faces hit this)."""
    df = pd.DataFrame({"y": [1.0, 2.0, 3.0], "g": ["a", "b", "c"], "u": ["1", "2", "3"]})
    table, tests = ts.cluster_ols(df, "y ~ C(g)", "u", {"g": ["C(g)[T.b]", "C(g)[T.c]"]})
    assert table["coef"].isna().all() and len(table) == 3
    assert all(math.isnan(v) for v in tests["g"])
