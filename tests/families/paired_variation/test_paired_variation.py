"""The paired-variation statistics (Beauty and the Bias) against SciPy on fixed data."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from stylisticbias.analysis import table_registry as reg
from stylisticbias.analysis.bootstrap import face_weights
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.families.paired_variation.analysis.counts import (
    Bootstrap,
    kruskal_counts,
    paired_data,
    signed_rank_counts,
)
from stylisticbias.families.paired_variation.analysis.groups import (
    group_gap,
    group_tests,
    stereotype_groups,
)
from stylisticbias.families.paired_variation.analysis.run import analyze_paired, paired_metrics
from stylisticbias.families.paired_variation.analysis.subgroups import (
    group_bias_by_kind,
    subgroup_variation_bias,
)
from stylisticbias.families.paired_variation.analysis.variation import (
    halo_rate,
    positive_share_bounds,
    variation_bias,
)

BOOT = Bootstrap(n_resamples=200, ci=0.95, seed=3)


@pytest.fixture(scope="module")
def beauty() -> Benchmark:
    return load_benchmark("beauty-and-the-bias")


def _scores(beauty: Benchmark, n_faces: int = 36, seed: int = 0, halo: float = 0.3) -> pd.DataFrame:
    """phi = k/12 per image x scenario; beautified images lean to the stereotyped choice on
    the halo scenarios by ``halo``; men lean to it on every scenario by 0.1."""
    rng = np.random.default_rng(seed)
    axes = beauty.demographics
    rows = []
    for f in range(n_faces):
        demo = {
            "gender": axes["gender"][f % 2],
            "age": axes["age"][(f // 2) % 3],
            "ethnicity": axes["ethnicity"][(f // 6) % 6],
            "body_type": axes["body_type"][0],
        }
        for kind in ("original", "beautified"):
            base = kind == "original"
            for s in beauty.scenarios:
                p = 0.4 + (0.1 if demo["gender"] == "male" else 0.0)
                if not base and "halo" in s.tags:
                    p += halo
                rows.append(
                    {
                        "model": "m1",
                        "image_id": f"f{f:03d}-{kind}",
                        "face_id": f"f{f:03d}",
                        "is_base": base,
                        "attribute": None if base else "Beauty filter",
                        "value": None if base else "Beautified",
                        **demo,
                        "scenario_id": s.id,
                        "phi": rng.binomial(12, min(p, 0.95)) / 12,
                        "simulated": True,
                    }
                )
    return pd.DataFrame(rows)


def _phi(df: pd.DataFrame, sid: int, **where: object) -> np.ndarray:
    m = df["scenario_id"] == sid
    for k, v in where.items():
        m &= df[k] == v
    return df.loc[m, "phi"].to_numpy()


@pytest.mark.parametrize("groups", [2, 3, 6])
def test_kruskal_counts_is_scipys_kruskal(groups: int) -> None:
    rng = np.random.default_rng(groups)
    data = [rng.integers(0, 13, size=rng.integers(3, 30)) / 12 for _ in range(groups)]
    values = np.unique(np.concatenate(data))
    counts = np.array([[np.sum(g == v) for v in values] for g in data], dtype=float)
    h, p, k = kruskal_counts(counts)
    ref = stats.kruskal(*data)
    assert h == pytest.approx(ref.statistic, rel=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-10)
    assert k == groups
    # integer frequency weights are repeated observations (what a bootstrap replicate is)
    w = rng.integers(1, 4, size=counts.shape[1])
    rep = [np.repeat(values, (c * w).astype(int)) for c in counts]
    h2, p2, _ = kruskal_counts(counts * w)
    assert h2 == pytest.approx(stats.kruskal(*rep).statistic, rel=1e-12)
    assert p2 == pytest.approx(stats.kruskal(*rep).pvalue, rel=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_signed_rank_counts_is_scipys_wilcoxon(seed: int) -> None:
    """Zeros dropped, mid-ranks for tied |d|, normal approximation with the tie correction:
    ``scipy.stats.wilcoxon(method="approx")``, also for integer frequency weights."""
    rng = np.random.default_rng(seed)
    d = np.round((rng.integers(0, 13, 40) - rng.integers(0, 13, 40) + (seed == 2)) / 12, 9)
    diffs = np.unique(d)
    counts = np.array([np.sum(d == v) for v in diffs], dtype=float)
    r_plus, p = signed_rank_counts(counts, diffs)
    ref = stats.wilcoxon(d, method="approx")
    assert p == pytest.approx(ref.pvalue, rel=1e-10)
    nz = d[d != 0]
    assert r_plus == pytest.approx(stats.rankdata(np.abs(nz))[nz > 0].sum())
    w = rng.integers(1, 4, size=len(diffs)).astype(float)
    _, p2 = signed_rank_counts(np.stack([counts, counts * w]), diffs)
    assert p2[0] == pytest.approx(p)
    assert p2[1] == pytest.approx(
        stats.wilcoxon(np.repeat(diffs, (counts * w).astype(int)), method="approx").pvalue,
        rel=1e-10,
    )
    _, p0 = signed_rank_counts(np.array([3.0]), np.array([0.0]))  # every difference zero
    assert np.isnan(p0)


def test_kruskal_counts_degenerate_cases() -> None:
    h, p, k = kruskal_counts(np.array([[3.0, 0.0], [4.0, 0.0]]))  # every value equal
    assert np.isnan(h) and np.isnan(p) and k == 2
    h, p, k = kruskal_counts(np.array([[3.0, 1.0], [0.0, 0.0]]))  # one non-empty group
    assert np.isnan(h) and k == 1
    # an empty group is left out, as if not given
    h3, _, k3 = kruskal_counts(np.array([[3.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 2.0, 2.0]]))
    assert k3 == 2
    assert h3 == pytest.approx(stats.kruskal([0, 0, 0, 1], [0, 1, 1, 2, 2]).statistic)


def _differences(df: pd.DataFrame, sid: int) -> np.ndarray:
    """One value per person: phi(beautified) - phi(original), in face order (pandas)."""
    d = df[df["scenario_id"] == sid].pivot(index="face_id", columns="is_base", values="phi")
    return (d[False] - d[True]).round(9).to_numpy()


@pytest.mark.parametrize("paper", [False, True], ids=["person", "paper"])
def test_variation_bias_is_the_tests_of_scipy(beauty: Benchmark, paper: bool) -> None:
    """Default: Wilcoxon signed-rank of the within-person differences (SciPy, normal
    approximation); paper: Kruskal-Wallis of the original vs the beautified images. ``h`` is
    the paper's H under both."""
    df = _scores(beauty)
    spec = beauty.statistics
    data = paired_data(df, beauty, spec)
    out = variation_bias(data, beauty, spec, BOOT, paper_tests=paper)
    assert len(out) == 91
    assert set(out["unit"]) == {"image" if paper else "person"}
    for sid in (1, 40, 47, 73, 91):
        row = out[out["scenario_id"] == sid].iloc[0]
        o, b = _phi(df, sid, is_base=True), _phi(df, sid, is_base=False)
        ref = stats.kruskal(o, b)
        assert row["h"] == pytest.approx(ref.statistic, rel=1e-10)
        wilcoxon = stats.wilcoxon(_differences(df, sid), method="approx")
        p = ref.pvalue if paper else wilcoxon.pvalue
        assert row["pval"] == pytest.approx(p, rel=1e-8)
        assert row["significant_alpha"] == (p < 0.01)
        assert row["mean_base"] == pytest.approx(o.mean())
        assert row["mean_variation"] == pytest.approx(b.mean())
        assert row["mean_base_low"] <= row["mean_base"] <= row["mean_base_high"]
        assert row["direction"] == ("beautified" if b.mean() > o.mean() else "original")
        assert row["halo"] == ("halo" in beauty.scenario(sid).tags)


@pytest.mark.parametrize("paper", [False, True], ids=["person", "paper"])
def test_halo_rate_counts_significant_scenarios_towards_the_positive_trait(
    beauty: Benchmark, paper: bool
) -> None:
    df = _scores(beauty)
    spec = beauty.statistics
    data = paired_data(df, beauty, spec)
    res = halo_rate(data, beauty, spec, BOOT, paper_tests=paper)
    halo_ids = [s.id for s in beauty.scenarios if "halo" in s.tags]
    n_halo = n_sig = 0
    for sid in halo_ids:
        o, b = _phi(df, sid, is_base=True), _phi(df, sid, is_base=False)
        if paper:
            sig = stats.kruskal(o, b).pvalue < 0.01
        else:
            sig = stats.wilcoxon(_differences(df, sid), method="approx").pvalue < 0.01
        n_sig += sig
        n_halo += sig and b.mean() > o.mean()
    assert res["n_scenarios"] == 33
    assert (res["n_significant"], res["n_halo"]) == (n_sig, n_halo)
    assert res["halo_rate"] == pytest.approx(n_halo / 33)
    assert res["halo_rate_low"] <= res["halo_rate_high"]
    if paper:  # a bootstrap interval of the paper's rate itself
        assert res["halo_rate_low"] <= res["halo_rate"] <= res["halo_rate_high"]
    else:  # bounds of the share with a positive true shift: every tagged one here
        assert res["halo_rate_low"] > 0.8 and res["halo_rate_high"] == 1.0
    assert res["halo_rate"] > 0.8  # the planted halo (0.3 on phi) is found
    # without a planted halo, hardly any scenario counts
    null_data = paired_data(_scores(beauty, halo=0.0), beauty, spec)
    null = halo_rate(null_data, beauty, spec, BOOT, paper_tests=paper)
    assert null["halo_rate"] < 0.15
    if not paper:  # the true share is 0: no scenario is found positive
        assert null["halo_rate_low"] == 0.0


def test_positive_share_bounds_are_step_down_max_t_over_persons() -> None:
    """The t statistics are one-sample t-tests (SciPy); clearly positive scenarios raise the
    lower bound, clearly negative ones lower the upper bound, null ones move neither."""
    rng = np.random.default_rng(4)
    shift = np.r_[np.full(6, 0.15), np.zeros(10), np.full(4, -0.15)]
    d = rng.normal(shift, 0.2, (80, 20))
    d[rng.random(d.shape) < 0.05] = np.nan
    low, high, t = positive_share_bounds(d, 0.95, 2000, 0)
    ref = [stats.ttest_1samp(d[~np.isnan(d[:, s]), s], 0.0).statistic for s in range(20)]
    assert t == pytest.approx(ref, rel=1e-10)
    assert (low, high) == (6 / 20, 16 / 20)
    # a one-sided 95% max-t bound over 10 independent nulls is ~2.57, a single test's 1.64
    assert 0 < low <= high <= 1


def _oriented_effects(df: pd.DataFrame, col: str) -> pd.Series:
    """Per face the mean over scenarios of o_s * (phi_b - phi_o), o_s the sign of the groups'
    (of ``col``) mean shifts weighted by n_g / v_g, v_g the group variance shrunk towards the
    pooled one with 2 pseudo-persons (pandas)."""
    wide = df.pivot_table(index=["face_id", "scenario_id"], columns="is_base", values="phi")
    d = (wide[False] - wide[True]).unstack("scenario_id")
    group = df.drop_duplicates("face_id").set_index("face_id").loc[d.index, col]
    pooled = d.var(axis=0, ddof=1)
    total = 0.0
    for _, dg in d.groupby(group):
        n = dg.notna().sum(axis=0)
        v = ((n - 1).clip(lower=0) * dg.var(axis=0, ddof=1).fillna(0) + 2 * pooled) / (
            (n - 1).clip(lower=0) + 2
        )
        total = total + n / v * dg.mean(axis=0)
    sign = np.sign(total.round(8))
    return (d * sign).mean(axis=1)


def _person_means(df: pd.DataFrame, sid: int, **where: object) -> np.ndarray:
    """One value per person: the mean phi of the person's two images (pandas, not counts)."""
    m = df["scenario_id"] == sid
    for k, v in where.items():
        m &= df[k] == v
    # rounded: (a + b) / 2 of two float k/12 can differ in the last bit from an equal mean
    return df[m].groupby("face_id")["phi"].mean().round(9).to_numpy()


@pytest.mark.parametrize("paper", [False, True], ids=["person", "paper"])
def test_group_tests_and_means_are_scipys(beauty: Benchmark, paper: bool) -> None:
    """Default: KW of the person means; paper: KW of every image pooled (as the paper)."""
    df = _scores(beauty)
    spec = beauty.statistics
    data = paired_data(df, beauty, spec)
    tests, means = group_tests(data, beauty, spec, BOOT, paper_tests=paper)
    assert set(tests["unit"]) == {"image" if paper else "person"}
    values = _phi if paper else _person_means
    for axis, col in (("gender", "gender"), ("age", "age"), ("race", "ethnicity")):
        groups = list(beauty.demographics[col])
        for sid in (2, 50):
            data = [values(df, sid, **{col: g}) for g in groups]
            ref = stats.kruskal(*data)
            row = tests[(tests["scenario_id"] == sid) & (tests["axis"] == axis)].iloc[0]
            assert row["h"] == pytest.approx(ref.statistic, rel=1e-10)
            assert row["pval"] == pytest.approx(ref.pvalue, rel=1e-8)
            assert row["n_groups"] == len(groups)
            m = means[(means["scenario_id"] == sid) & (means["axis"] == axis)]
            images = [_phi(df, sid, **{col: g}) for g in groups]
            assert m["mean"].to_numpy() == pytest.approx([d.mean() for d in images])
            assert row["highest_group"] == groups[int(np.argmax([d.mean() for d in images]))]


@pytest.mark.parametrize("paper", [False, True], ids=["person", "paper"])
def test_stereotype_groups_compare_the_two_groups(beauty: Benchmark, paper: bool) -> None:
    df = _scores(beauty)
    spec = beauty.statistics
    out = stereotype_groups(paired_data(df, beauty, spec), beauty, spec, paper_tests=paper)
    assert len(out) == 19 + 12
    assert set(out["test"]) == {
        "kruskal_wallis_pooled_images (paper)" if paper else "kruskal_wallis_person_means"
    }
    values = _phi if paper else _person_means
    row = out[out["scenario_id"] == 20].iloc[0]  # Construction worker (Latino) / Bus driver
    assert (row["group_stereotyped"], row["group_other"]) == ("Latino", "Black")
    la, bl = values(df, 20, ethnicity="Latino"), values(df, 20, ethnicity="Black")
    assert row["h"] == pytest.approx(stats.kruskal(la, bl).statistic, rel=1e-10)
    assert row["mean_stereotyped_group"] == pytest.approx(_phi(df, 20, ethnicity="Latino").mean())
    male = out[out["scenario_id"] == 1].iloc[0]
    m, f = values(df, 1, gender="male"), values(df, 1, gender="female")
    assert male["pval"] == pytest.approx(stats.kruskal(m, f).pvalue, rel=1e-8)
    assert male["stereotyped_direction"] == bool(male["significant_alpha"] and m.mean() > f.mean())


def test_w_attr_default_is_welch_t_of_oriented_person_effects(beauty: Benchmark) -> None:
    df = _scores(beauty)
    spec = beauty.statistics
    sub_h, pairs = subgroup_variation_bias(paired_data(df, beauty, spec), beauty, spec)
    assert set(pairs["test"]) == {"welch_t_person_oriented_shift"}
    face = df.drop_duplicates("face_id").set_index("face_id")
    for axis, col, a, b in (("gender", "gender", "male", "female"), ("age", "age", "young", "old")):
        u = _oriented_effects(df, col)
        ua, ub = u[face.loc[u.index, col] == a], u[face.loc[u.index, col] == b]
        ref = stats.ttest_ind(ua, ub, equal_var=False)
        row = pairs[(pairs["axis"] == axis) & (pairs["group_a"] == a) & (pairs["group_b"] == b)]
        row = row.iloc[0]
        # phi is rounded to 9 decimals in the library, not here
        assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-7)
        assert row["pval"] == pytest.approx(ref.pvalue, rel=1e-7)
        k = 1 if axis == "gender" else 3
        assert row["pval_bonferroni"] == pytest.approx(min(1.0, ref.pvalue * k), rel=1e-7)
        assert (row["effect_a"], row["effect_b"]) == pytest.approx((ua.mean(), ub.mean()))
        assert row["stronger"] == (a if ua.mean() > ub.mean() else b)
        shift = sub_h[(sub_h["axis"] == axis) & (sub_h["group"] == a)]["shift"].to_numpy()
        ref_shift = [
            (
                _phi(df, s.id, is_base=False, **{col: a}) - _phi(df, s.id, is_base=True, **{col: a})
            ).mean()
            for s in beauty.scenarios
        ]
        assert shift == pytest.approx(ref_shift, abs=1e-8)  # phi rounded to 9 decimals


def test_w_attr_paper_is_wilcoxon_of_subgroup_h_with_bonferroni(beauty: Benchmark) -> None:
    df = _scores(beauty)
    spec = beauty.statistics
    data = paired_data(df, beauty, spec)
    sub_h, pairs = subgroup_variation_bias(data, beauty, spec, paper_tests=True)
    assert sorted(pairs.groupby("axis").size().to_dict().items()) == [
        ("age", 3),
        ("gender", 1),
        ("race", 15),
    ]
    ids = [s.id for s in beauty.scenarios]

    def h_of(col: str, g: str) -> np.ndarray:
        out = []
        for sid in ids:
            o = _phi(df, sid, is_base=True, **{col: g})
            b = _phi(df, sid, is_base=False, **{col: g})
            out.append(np.nan if np.all(np.r_[o, b] == o[0]) else stats.kruskal(o, b).statistic)
        return np.array(out)

    for axis, col, a, b in (("gender", "gender", "male", "female"), ("age", "age", "young", "old")):
        ha, hb = h_of(col, a), h_of(col, b)
        keep = ~(np.isnan(ha) | np.isnan(hb))
        ref = stats.wilcoxon(ha[keep], hb[keep])
        row = pairs[(pairs["axis"] == axis) & (pairs["group_a"] == a) & (pairs["group_b"] == b)]
        row = row.iloc[0]
        assert row["statistic"] == pytest.approx(ref.statistic)
        assert row["pval"] == pytest.approx(ref.pvalue, rel=1e-10)
        k = 1 if axis == "gender" else 3
        assert row["n_comparisons"] == k
        assert row["pval_bonferroni"] == pytest.approx(min(1.0, ref.pvalue * k), rel=1e-10)
        got = sub_h[(sub_h["axis"] == axis) & (sub_h["group"] == a)]["h"].to_numpy()
        assert got == pytest.approx(ha, nan_ok=True)


def _welch_anova_chi2(x: np.ndarray, labels: np.ndarray, floor: float = 0.0) -> float:
    """One scenario's Welch ANOVA (Welch 1951) on the chi-square scale, written out: groups of
    fewer than two values left out, each group's variance floored at ``floor``."""
    parts = [x[labels == g] for g in np.unique(labels)]
    parts = [v for v in parts if len(v) > 1]
    k = len(parts)
    if k < 2:
        return 0.0
    n = np.array([len(v) for v in parts], dtype=float)
    w = n / np.array([max(np.var(v, ddof=1), floor) for v in parts])
    m = np.array([v.mean() for v in parts])
    mw = (w * m).sum() / w.sum()
    lam = ((1 - w / w.sum()) ** 2 / (n - 1)).sum()
    f = (w * (m - mw) ** 2).sum() / (k - 1) / (1 + 2 * (k - 2) * lam / (k**2 - 1))
    p = stats.f.sf(f, k - 1, (k**2 - 1) / (3 * lam))
    return float(stats.chi2.isf(max(p, 1e-300), k - 1))


def test_sum_welch_anova_is_welch_t_for_two_groups_and_statsmodels_welch_for_three() -> None:
    """Two groups: per scenario the chi-square(1) quantile of SciPy's Welch t-test p-value,
    summed; three groups (one of a single value, left out; one scenario all tied; a missing
    value): statsmodels' Welch ANOVA (``anova_oneway(use_var="unequal")``) the same way; a
    leading permutation axis gives each permutation's value."""
    from statsmodels.stats.oneway import anova_oneway

    from stylisticbias.families.paired_variation.analysis.subgroups import sum_welch_anova

    rng = np.random.default_rng(5)
    x = rng.normal(0.0, 1.0, (23, 4)) * np.r_[np.ones(10), 3.0 * np.ones(13)][:, None]
    x[:10, 0] += 1.0
    two = np.r_[np.zeros(10, int), np.ones(13, int)]
    onehot = (two[None, :] == np.arange(2)[:, None]).astype(float)
    ref = sum(
        stats.chi2.isf(stats.ttest_ind(x[two == 0, s], x[two == 1, s], equal_var=False).pvalue, 1)
        for s in range(4)
    )
    assert sum_welch_anova(x, np.ones_like(x), onehot) == pytest.approx(ref, rel=1e-9)

    three = np.r_[np.zeros(8, int), np.ones(7, int), 2 * np.ones(7, int), 3]  # 3: one person
    x[:, 3] = 0.5  # all tied: adds nothing
    present = np.ones_like(x)
    x[4, 1], present[4, 1] = 0.0, 0.0  # missing
    ref = 0.0
    for s in range(3):
        ok = present[:, s] > 0
        xs, gs = x[ok, s], three[ok]
        welch = anova_oneway([xs[gs == g] for g in range(3)], use_var="unequal")
        ref += stats.chi2.isf(welch.pvalue, 2)
        assert _welch_anova_chi2(xs, gs) == pytest.approx(stats.chi2.isf(welch.pvalue, 2))
    perms = np.stack([three, rng.permutation(three)])
    onehot = (perms[:, None, :] == np.arange(4)[None, :, None]).astype(float)
    got = sum_welch_anova(x, present, onehot)
    assert got[0] == pytest.approx(ref, rel=1e-9)
    assert got[1] == pytest.approx(sum_welch_anova(x, present, onehot[1]), rel=1e-12)


def test_group_bias_by_kind_default_is_a_permutation_of_summed_welch_anova(
    beauty: Benchmark,
) -> None:
    """Sum over scenarios of statsmodels' Welch ANOVA on the chi-square scale of the
    within-person differences between the axis's groups (a group's variance floored at 5% of
    the scenario's); its p-value against a brute-force run of the same permutations."""
    df = _scores(beauty, n_faces=24)
    spec = beauty.statistics
    boot = Bootstrap(n_resamples=40, ci=0.95, seed=2)
    out = group_bias_by_kind(paired_data(df, beauty, spec), beauty, spec, boot=boot)
    assert set(out["test"]) == {"permutation_sum_welch_anova_person_differences"}
    wide = df.pivot_table(index=["face_id", "scenario_id"], columns="is_base", values="phi")
    d = (wide[False] - wide[True]).unstack("scenario_id").round(6)  # k/12 - j/12, ties kept
    age = df.drop_duplicates("face_id").set_index("face_id").loc[d.index, "age"].to_numpy()
    groups = [g for g in beauty.demographics["age"] if g in set(age)]
    cols = {sid: d[sid].to_numpy() for sid in d.columns}

    def total(labels: np.ndarray) -> float:
        return sum(
            _welch_anova_chi2(r, labels, 0.05 * np.var(r, ddof=1))
            for r in cols.values()
            if np.var(r) > 0
        )

    row = out[out["axis"] == "age"].iloc[0]
    observed = total(age)
    assert observed > 0
    assert row["statistic"] == pytest.approx(observed, rel=1e-10)
    member = np.array([groups.index(g) for g in age])
    axis_ix = list(spec.group_tests).index("age")
    perms = np.random.default_rng(boot.seed + 7919 * (axis_ix + 1)).permuted(
        np.tile(member, (boot.n_resamples, 1)), axis=1
    )
    hits = sum(total(np.array(groups)[p]) >= observed - 1e-9 * observed for p in perms)
    assert row["pval"] == pytest.approx((1 + hits) / (1 + boot.n_resamples))
    assert row["pval_bonferroni"] == pytest.approx(min(1.0, 3 * row["pval"]))


def test_group_bias_by_kind_paper_is_wilcoxon_of_h_original_vs_beautified(
    beauty: Benchmark,
) -> None:
    df = _scores(beauty)
    spec = beauty.statistics
    out = group_bias_by_kind(paired_data(df, beauty, spec), beauty, spec, paper_tests=True)
    ho, hb = [], []
    for s in beauty.scenarios:
        for base, acc in ((True, ho), (False, hb)):
            acc.append(
                stats.kruskal(
                    *(_phi(df, s.id, is_base=base, gender=g) for g in ("male", "female"))
                ).statistic
            )
    ref = stats.wilcoxon(ho, hb)
    row = out[out["axis"] == "gender"].iloc[0]
    assert row["statistic"] == pytest.approx(ref.statistic)
    assert row["pval_bonferroni"] == pytest.approx(min(1.0, 3 * ref.pvalue), rel=1e-10)


def test_every_table_matches_its_registry_schema(beauty: Benchmark, tmp_path) -> None:
    df = _scores(beauty, n_faces=24)
    df2 = _scores(beauty, n_faces=24, seed=1).assign(model="m2")
    s = AnalysisSettings(n_resamples=50)
    tables = analyze_paired({"m1": df, "m2": df2}, beauty, s, {"m1": "Model one"})
    assert set(tables) == {t.name for t in reg.PAIRED_TABLES}
    for t in reg.PAIRED_TABLES:
        assert set(t.columns) <= set(reg.VOCABULARY), t.name
    reg.write_tables(tables, tmp_path)
    for t in reg.PAIRED_TABLES:
        back = reg.read_table(t.name, tmp_path)
        assert list(back.columns) == list(t.columns)
        assert set(back["model"]) == {"Model one", "m2"}
    rates = tables["paired_category_rates"]
    total = rates[(rates["bias_test"] == "variation") & (rates["scenario_category"] == "all")]
    assert total["n_scenarios"].tolist() == [91, 91]
    sub = rates[(rates["bias_test"] == "variation") & (rates["subcategory"] == "Sentiment")]
    assert sub["n_scenarios"].tolist() == [33, 33]
    metrics = paired_metrics(tables)
    assert set(metrics) == {"Model one", "m2"}
    assert 0 <= metrics["m2"]["halo"]["rate"] <= 1
    assert metrics["m2"]["share_significant"]["variation"]["all"] == pytest.approx(
        total["share_significant"].iloc[1]
    )


def test_bootstrap_is_deterministic_and_face_level(beauty: Benchmark) -> None:
    df = _scores(beauty, n_faces=12)
    spec = beauty.statistics
    data = paired_data(df, beauty, spec)
    a = variation_bias(data, beauty, spec, BOOT)
    b = variation_bias(data, beauty, spec, BOOT)
    pd.testing.assert_frame_equal(a, b)
    # a replicate's counts are the draw counts times each face's counts (faces, not rows)
    w = np.zeros((1, len(data.faces)))
    w[0, 0] = 12.0
    one = data.weighted(w)[0]
    assert one == pytest.approx(12 * data.counts[0])
    assert list(itertools.islice(data.faces, 2)) == ["f000", "f001"]


def test_shift_and_means_cis_are_student_t_over_persons(beauty: Benchmark) -> None:
    """Default: the shift's CI is the paired t interval of the within-person differences, a
    group mean's the t interval of the group's person means (SciPy)."""
    df = _scores(beauty)
    spec = beauty.statistics
    data = paired_data(df, beauty, spec)
    row = variation_bias(data, beauty, spec, BOOT).set_index("scenario_id").loc[47]
    d = _differences(df, 47)
    ref = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (row["shift_low"], row["shift_high"]) == pytest.approx((ref.low, ref.high), abs=1e-9)
    o = _phi(df, 47, is_base=True)
    ref = stats.ttest_1samp(o, 0.0).confidence_interval(0.95)
    assert (row["mean_base_low"], row["mean_base_high"]) == pytest.approx((ref.low, ref.high))
    _, means = group_tests(data, beauty, spec, BOOT)
    g = means[(means["scenario_id"] == 50) & (means["axis"] == "race")].set_index("group")
    pm = _person_means(df, 50, ethnicity="Black")
    ref = stats.ttest_1samp(pm, 0.0).confidence_interval(0.95)
    assert (g.loc["Black", "mean_low"], g.loc["Black", "mean_high"]) == pytest.approx(
        (ref.low, ref.high), abs=1e-9
    )


def test_shift_and_group_gap_cis_are_face_bootstraps_of_the_differences(beauty: Benchmark) -> None:
    """The paper's definitions keep the face-bootstrap percentile intervals."""
    df = _scores(beauty)
    spec = beauty.statistics
    data = paired_data(df, beauty, spec)
    out = variation_bias(data, beauty, spec, BOOT, paper_tests=True)
    row = out[out["scenario_id"] == 47].iloc[0]
    o, b = _phi(df, 47, is_base=True), _phi(df, 47, is_base=False)
    assert row["shift"] == pytest.approx(b.mean() - o.mean())
    assert row["shift_low"] < row["shift"] < row["shift_high"]
    # the CI by hand: resample faces with the same draw counts
    w = face_weights(len(data.faces), BOOT.n_resamples, BOOT.seed)
    per_face = df[df["scenario_id"] == 47].pivot(index="face_id", columns="is_base", values="phi")
    per_face = per_face.loc[list(data.faces)]
    diffs = (w @ per_face[False].to_numpy() - w @ per_face[True].to_numpy()) / w.sum(axis=1)
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert (row["shift_low"], row["shift_high"]) == pytest.approx((lo, hi), abs=1e-8)  # phi rounded
    gap, glo, ghi = group_gap(data, "gender", "male", "female", BOOT)
    s = list(data.scenario_ids).index(1)
    m, f = _phi(df, 1, gender="male"), _phi(df, 1, gender="female")
    assert gap[s] == pytest.approx(f.mean() - m.mean())
    assert glo[s] <= gap[s] <= ghi[s]


def test_w_attr_official_keeps_the_overall_orientation(beauty: Benchmark) -> None:
    """Under the paper's tests the descriptive oriented effects beside them use the earlier
    orientation (the sign of each scenario's mean shift over everyone), so the official table
    is unchanged; the default orients each axis by its groups' precision-weighted shifts."""
    df = _scores(beauty)
    spec = beauty.statistics
    data = paired_data(df, beauty, spec)
    paper = subgroup_variation_bias(data, beauty, spec, paper_tests=True)[1]
    wide = df.pivot_table(index=["face_id", "scenario_id"], columns="is_base", values="phi")
    d = (wide[False] - wide[True]).unstack("scenario_id")
    u = (d * np.sign(d.mean(axis=0).round(8))).mean(axis=1)
    face = df.drop_duplicates("face_id").set_index("face_id")
    row = paper[(paper["axis"] == "gender") & (paper["group_a"] == "male")].iloc[0]
    male = u[face.loc[u.index, "gender"] == "male"]
    assert row["effect_a"] == pytest.approx(male.mean())
