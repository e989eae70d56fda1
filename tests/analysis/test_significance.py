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
