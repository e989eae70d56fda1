"""Significance helpers vs. statsmodels / SciPy on fixed data, and their degenerate inputs."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from statsmodels.stats.multitest import multipletests

from stylisticbias.analysis.paper_tables import DIMENSIONS, table12_grid
from stylisticbias.analysis.significance import (
    _scenario_samples,
    demographic_tests,
    marks,
    p_adjust,
    wilcoxon_faces,
)

P = np.array([0.001, 0.04, 0.03, 0.2, 0.5, 0.0004, 0.049, 0.9, 0.011, 0.02])


@pytest.mark.parametrize(
    ("ours", "theirs"), [("fdr_bh", "fdr_bh"), ("bonferroni", "bonferroni"), ("holm", "holm")]
)
def test_p_adjust_matches_statsmodels(ours: str, theirs: str) -> None:
    assert_allclose(p_adjust(P, ours), multipletests(P, method=theirs)[1], rtol=1e-12)


def test_p_adjust_nan_left_out_of_family() -> None:
    p = np.r_[P, np.nan]
    out = p_adjust(p, "fdr_bh")
    assert np.isnan(out[-1])
    assert_allclose(out[:-1], multipletests(P, method="fdr_bh")[1])


def test_p_adjust_bad_input() -> None:
    with pytest.raises(ValueError, match="unknown correction"):
        p_adjust(P, "sidak-ish")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        p_adjust([0.5, 1.5])
    assert p_adjust([], "fdr_bh").size == 0


def test_marks() -> None:
    assert list(marks([0.0001, 0.01, 0.2, np.nan])) == ["p<0.001", "p<0.05", "ns", ""]


def test_wilcoxon_faces_matches_scipy() -> None:
    rng = np.random.default_rng(1)
    fm = rng.normal(0.05, 0.1, size=(60, 3))
    fm[40:, 1] = np.nan  # a cell with fewer faces
    p, n = wilcoxon_faces(fm)
    for c in range(3):
        x = fm[:, c][np.isfinite(fm[:, c])]
        meth = "exact" if x.size < 50 else "asymptotic"  # R wilcox.test rule (no ties here)
        assert_allclose(p[c], stats.wilcoxon(x, method=meth).pvalue)
    assert list(n) == [60, 40, 60]
    small = rng.normal(0.1, 0.1, size=(10, 1))  # n < 50, no ties: exact, like R
    assert_allclose(wilcoxon_faces(small)[0][0], stats.wilcoxon(small[:, 0], method="exact").pvalue)


def test_wilcoxon_faces_degenerate(caplog: pytest.LogCaptureFixture) -> None:
    fm = np.array([[0.0, 0.3, np.nan], [0.0, np.nan, np.nan], [0.0, np.nan, np.nan]])
    with caplog.at_level(logging.WARNING):
        p, _n = wilcoxon_faces(fm, labels=["zeros", "single", "empty"])
    assert np.isnan(p).all()
    assert "zeros" in caplog.text and "exactly 0" in caplog.text
    assert "single (1 face(s))" in caplog.text and "min_faces=2" in caplog.text
    # one summary line per kind, not one per cell
    many = np.full((1, 20), 0.2)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        wilcoxon_faces(many, labels=[f"cell{i}" for i in range(20)])
    assert len(caplog.records) == 1
    assert "20 cell(s)" in caplog.text and "cell7" in caplog.text and "and 12 more" in caplog.text
    with pytest.raises(ValueError, match="2-D"):
        wilcoxon_faces(np.zeros(3))


def test_demographic_tests_match_scipy(synth: pd.DataFrame) -> None:
    base = synth[synth.is_base]
    out = demographic_tests(base, DIMENSIONS)
    assert len(out) == 2 * 25 * 4
    g = base[(base.model == "m1") & (base.scenario_id == 3)]
    row = out[(out.model == "m1") & (out.scenario_id == 3)].set_index("dimension")
    kw = stats.kruskal(*[x.phi.to_numpy() for _, x in g.groupby("age")])
    assert_allclose(row.loc["age", "pval"], kw.pvalue)
    assert row.loc["age", "test"] == "kruskal"
    mw = stats.mannwhitneyu(
        *[x.phi.to_numpy() for _, x in g.groupby("gender")], alternative="two-sided"
    )
    assert_allclose(row.loc["gender", "pval"], mw.pvalue)
    assert row.loc["gender", "test"] == "mannwhitneyu"
    fam = out[(out.model == "m1") & (out.dimension == "body")]
    assert_allclose(fam.pval_corr, multipletests(fam.pval, method="fdr_bh")[1])


def test_demographic_tests_constant_phi(
    synth: pd.DataFrame, caplog: pytest.LogCaptureFixture
) -> None:
    base = synth[synth.is_base & (synth.model == "m1")].copy()
    base["phi"] = 0.5
    with caplog.at_level(logging.WARNING):
        out = demographic_tests(base, {"age": "age"})
    assert out.pval.isna().all() and not out.significant.any()
    lines = [r for r in caplog.records if "phi are all identical" in r.message]
    assert len(lines) == 1, "one summary line, not one per scenario"


def test_demographic_groups_with_one_face_are_listed_once(
    synth: pd.DataFrame, caplog: pytest.LogCaptureFixture
) -> None:
    base = synth[synth.is_base & (synth.model == "m1")].copy()
    faces = base.drop_duplicates("face_id")
    lone = faces[faces.age == faces.age.iloc[0]].face_id.iloc[1:]  # keep one face of that age
    base = base[~base.face_id.isin(lone)]
    with caplog.at_level(logging.WARNING):
        demographic_tests(base, {"age": "age", "gender": "gender"})
    lines = [r.message for r in caplog.records if "fewer than 2 base faces" in r.message]
    assert len(lines) == 1
    assert f"m1/age={faces.age.iloc[0]} (1 face)" in lines[0] and "gender" not in lines[0]


def test_table12_grid_has_437_tested_cells(benchmark) -> None:
    grid = table12_grid(benchmark)
    assert len(grid) == 34 * 13
    assert int(grid.applicable.sum()) == 437
    na = grid[~grid.applicable]
    assert sorted(na.group.unique()) == ["female", "male"]
    assert len(na) == 5


def _cluster_contrast(rows: pd.DataFrame, coef: dict[str, float]) -> tuple[float, float]:
    """Independent: OLS of row delta on cell dummies, face-clustered sandwich covariance
    (statsmodels, no small-sample factor), rescaled by F/(F-1); t-test of the contrast."""
    import statsmodels.api as sm

    x = pd.get_dummies(rows["cell"]).astype(float)
    fit = sm.OLS(rows["delta"].to_numpy(), x).fit(
        cov_type="cluster", cov_kwds={"groups": rows["face"].cat.codes, "use_correction": False}
    )
    a = np.array([coef.get(c, 0.0) for c in x.columns])
    f = rows["face"].nunique()
    est = float(a @ fit.params.to_numpy())
    se = np.sqrt(a @ fit.cov_params().to_numpy() @ a * f / (f - 1))
    return est, float(2 * stats.t.sf(abs(est / se), df=f - 1))


def test_contrast_ttest_matches_a_cluster_robust_regression() -> None:
    from stylisticbias.analysis.significance import contrast_ttest

    rng = np.random.default_rng(4)
    n_faces, cells = 30, ["c0", "c1", "c2"]
    recs = []
    for f in range(n_faces):
        for ci, c in enumerate(cells):
            if rng.random() < 0.3:  # a face misses some cells (unequal cell sizes)
                continue
            for _ in range(rng.integers(1, 6)):
                recs.append((f"f{f}", c, 0.02 * ci + 0.01 + rng.normal(0, 0.1)))
    rows = pd.DataFrame(recs, columns=["face", "cell", "delta"]).astype({"face": "category"})
    num = rows.pivot_table(
        index="face", columns="cell", values="delta", aggfunc="sum", fill_value=0.0, observed=False
    )
    den = rows.pivot_table(
        index="face", columns="cell", values="delta", aggfunc="size", fill_value=0, observed=False
    )
    for coef in ({"c0": 1 / 3, "c1": 1 / 3, "c2": 1 / 3}, {"c2": 1.0, "c0": -1.0}):
        a = np.array([coef.get(c, 0.0) for c in num.columns])
        est, p, nf = contrast_ttest(num.to_numpy(), den.to_numpy(), a)
        want_est, want_p = _cluster_contrast(rows, coef)
        assert nf == n_faces
        assert_allclose(est, want_est, rtol=1e-10)
        assert_allclose(p, want_p, rtol=1e-6)


def test_table3_tests_the_printed_cell(synth: pd.DataFrame, benchmark) -> None:
    """Each Table 3 cell's p tests its own printed number (mean of its Table 12 cells): equal to
    the cluster-robust test of that contrast, different across the four dimensions, and a mark
    never contradicts a CI that excludes 0 by a wide margin."""
    from stylisticbias.analysis.paper_tables import shift_cells, table3
    from stylisticbias.analysis.settings import AnalysisSettings

    s = AnalysisSettings(n_resamples=200, correction="none")
    delta = synth[~synth.is_base & synth.delta.notna()]
    faces = pd.Index(np.sort(synth.face_id.unique()))
    t3 = table3(delta, faces, shift_cells(delta, faces, s), benchmark, s)
    cell = t3[(t3.category == "Fashion") & (t3.dimension == "age")].iloc[0]
    sub = delta[delta.category == "Fashion"]
    groups = sorted(sub.age.unique())
    rows = pd.DataFrame(
        {
            "face": sub.face_id.astype("category"),
            "cell": sub.attribute + "|" + sub.value + "|" + sub.age,
            "delta": sub.delta,
        }
    )
    cells = rows["cell"].unique()
    est, p = _cluster_contrast(rows, {c: 1.0 / len(cells) for c in cells})
    assert len(cells) == sub[["attribute", "value"]].drop_duplicates().shape[0] * len(groups)
    assert_allclose(cell.sbs, est, rtol=1e-9)
    assert_allclose(cell.pval, p, rtol=1e-6)
    by_dim = t3[(t3.category == "Fashion")].set_index("dimension").pval
    assert by_dim.nunique() == 4  # one test per printed cell, not per category
    tested = t3[t3.category != "Average"]
    for r in tested.itertuples():
        if r.ci_low > 0.01 or r.ci_high < -0.01:
            assert r.pval < s.alpha, r


def test_wilcoxon_continuity_correction_is_a_setting() -> None:
    """analysis.wilcoxon_correction: R's default (True) vs SciPy's (False) on the normal approx."""
    from stylisticbias.analysis.settings import AnalysisSettings

    rng = np.random.default_rng(8)
    x = np.round(rng.normal(0.01, 0.05, size=(80, 1)), 3)  # n >= 50: normal approximation
    p0, _ = wilcoxon_faces(x)
    p1, _ = wilcoxon_faces(x, correction=True)
    want = stats.wilcoxon(x[:, 0], correction=True, method="asymptotic").pvalue
    assert_allclose(p1[0], want)
    assert p1[0] > p0[0]
    s = AnalysisSettings.from_config({"wilcoxon_correction": True})
    assert s.sbs_kwargs()["correction"] is True


def _groupby_reference(base: pd.DataFrame, dimensions: dict[str, str]) -> list[tuple]:
    """The pandas group-by-group loop (the former implementation) the sort-based one replaced."""
    rows = []
    for (model, sid), g in base.groupby(["model", "scenario_id"], sort=True, observed=True):
        g = g[g["phi"].notna()]
        for dim, col in dimensions.items():
            samples = [
                s.to_numpy(dtype=np.float64)
                for _, s in g.groupby(col, sort=True, observed=True)["phi"]
            ]
            rows.append((str(model), int(sid), dim, [s for s in samples if s.size]))
    return rows


@pytest.mark.parametrize("categorical", [True, False])
def test_demographic_tests_equal_the_groupby_loop(synth: pd.DataFrame, categorical: bool) -> None:
    """Same cells, same samples (values and order), so the same statistics bit for bit; with
    missing phi, a group absent from one scenario, and plain or categorical columns."""
    base = synth[synth.is_base].copy()
    base.loc[base.index[::7], "phi"] = np.nan
    first = base.iloc[0]
    gone = (base["scenario_id"] == first["scenario_id"]) & (base["age"] == first["age"])
    base = base[~gone.to_numpy()]
    if categorical:
        for c in ("model", *DIMENSIONS.values()):
            base[c] = base[c].astype("category")
    else:
        base = base.astype({c: object for c in ("model", *DIMENSIONS.values())})
    want = _groupby_reference(base, DIMENSIONS)
    got = [(str(m), int(s), d, x) for m, s, d, x in _scenario_samples(base, DIMENSIONS)]
    assert [r[:3] for r in got] == [r[:3] for r in want]
    for g, w in zip(got, want):
        assert len(g[3]) == len(w[3])
        for a, b in zip(g[3], w[3]):
            np.testing.assert_array_equal(a, b)
