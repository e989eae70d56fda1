"""The valid-inference benchmark of the paired-variation family: its designs, truth and merge."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit

from stylisticbias.benchmark import load_benchmark
from stylisticbias.config import ROOT
from stylisticbias_dev.bench import paired_calibration
from stylisticbias_dev.bench import paired_valid_inference as vi


@pytest.fixture(scope="module")
def beauty():
    return load_benchmark("beauty-and-the-bias")


def test_truth_is_the_population_mean_of_the_design(beauty) -> None:
    """The Gauss-Hermite truth equals the mean phi of a large drawn population."""
    design = replace(vi.DESIGNS[1], n_persons=20_000)
    pl = vi.plan(design, beauty)
    data = vi.draw(design, beauty, pl, 0)
    tr = vi.truth(design, beauty, pl)
    phi = data.person_phi()  # (P, S, 2)
    assert np.abs(phi.mean(axis=0) - tr["kind"]).max() < 0.012
    male = data.labels["gender"] == "male"
    got = phi[male].mean(axis=(0, 2))
    assert np.abs(got - tr["by_group"]["gender"][:, 0]).max() < 0.02


def test_one_small_run_reports_every_table_of_both_variants(beauty) -> None:
    design = replace(vi.DESIGNS[1], n_persons=40)
    out = vi.run_design(design, beauty, replicates=2, boot=vi.Bootstrap(20, 0.95, 0))
    for table in ("paired_variation_bias", "paired_group_tests", "paired_stereotype_groups"):
        for label, _ in vi.VARIANTS:
            assert table in out and label in out[table]
    rates = out["paired_group_tests"]["person (default)"]["all_axes"]
    assert rates["null_false_positive_rate"]["alpha_0.05"]["n"] > 0
    assert rates["power_planted"]["alpha_0.05"]["n"] > 0
    assert "paired_subgroup_wilcoxon" in out and "paired_group_bias_by_kind" in out


def test_both_writers_keep_each_others_keys(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"plants": {"x": 1}, "protocols": {"reflect": {"y": 2}}}))
    vi.merge_valid_inference(path, {"designs": {}})
    paired_calibration.merge_into(path, "beauty-and-the-bias", {"halo": {"coverage": 0.95}})
    doc = json.loads(path.read_text())
    assert doc["plants"] == {"x": 1} and doc["protocols"]["reflect"] == {"y": 2}
    sec = doc["protocols"]["beauty-and-the-bias"]
    assert sec["valid_inference"] == {"designs": {}} and sec["halo"] == {"coverage": 0.95}


def test_group_shifts_are_the_mean_shift_of_each_group_of_a_large_population(beauty) -> None:
    """The exact per-group shift (Gauss-Hermite over the cells of the other columns) equals the
    mean shift of a simulated population (expit of the design's logits, drawn here directly)."""
    design = vi.DESIGNS[1]  # group and edit effects planted
    pl = vi.plan(design, beauty)
    got = vi.group_shifts(design, beauty, pl)
    rng = np.random.default_rng(0)
    n = 40_000
    labels = {
        col: np.array(beauty.demographics[col])[
            rng.choice(len(sh), size=n, p=np.asarray(sh) / np.sum(sh))
        ]
        for col, sh in design.shares.items()
    }
    member = np.stack(
        [labels[a] == g for a, g in zip(pl.group_axis, pl.group_name, strict=True)], axis=1
    )
    eta = (
        pl.mu
        + rng.normal(0.0, design.person_sd, (n, 1)) * pl.loading
        + rng.normal(0.0, design.person_scenario_sd, (n, len(pl.mu)))
        + pl.beta * member
    )
    c0, c1 = rng.normal(0.0, design.photo_sd, (2, n, len(pl.mu)))
    shift = expit(eta + c1 + pl.delta) - expit(eta + c0)
    for col in ("gender", "ethnicity"):
        for g, name in enumerate(beauty.demographics[col]):
            sim = shift[labels[col] == name].mean(axis=0)
            assert np.abs(sim - got[col][:, g]).max() < 0.02, (col, name)
    men, women = shift[labels["gender"] == "male"], shift[labels["gender"] == "female"]
    gap = men.mean(axis=0) - women.mean(axis=0)
    gender = np.array([a == "gender" for a in pl.group_axis])
    planted_both = (pl.delta != 0) & (pl.beta != 0) & gender
    exact = got["gender"][:, 0] - got["gender"][:, 1]
    assert np.abs(gap - exact)[planted_both].max() < 0.02
    assert planted_both.any() and np.abs(exact[planted_both]).min() > 1e-4  # small, real
    assert np.abs(exact[~planted_both]).max() < vi.NULL_TOLERANCE


def test_w_attr_and_table_4_nulls_are_decided_from_the_design(beauty) -> None:
    """A cell is a null only where every group's true shift is equal in every scenario: all
    of them without group effects; with group effects planted beside the edit, the gender pair
    (men are the planted group of the scenarios without a stereotype) is a small true
    difference, not a null; the age pairs keep their null (no age group planted with an
    edit in this design)."""
    null = vi.subgroup_truth(vi.DESIGNS[0], beauty, vi.plan(vi.DESIGNS[0], beauty))
    assert all(null["pair_null"].values()) and all(null["axis_null"].values())
    assert max(abs(v) for v in null["pair"].values()) < vi.NULL_TOLERANCE
    planted = vi.subgroup_truth(vi.DESIGNS[1], beauty, vi.plan(vi.DESIGNS[1], beauty))
    assert not planted["pair_null"][("gender", "male", "female")]
    assert 5e-4 < abs(planted["pair"][("gender", "male", "female")]) < 5e-3
    assert not planted["axis_null"]["gender"]
    assert all(v for (axis, _, _), v in planted["pair_null"].items() if axis == "age")
    assert planted["axis_null"]["age"]
    women = vi.SUBGROUP_DESIGNS[1]  # the edit 1.2 times as strong for women
    extra = vi.subgroup_truth(women, beauty, vi.plan(women, beauty))
    assert not extra["pair_null"][("gender", "male", "female")]
    assert extra["pair"][("gender", "male", "female")] < -5e-3
    assert all(v for (axis, _, _), v in extra["pair_null"].items() if axis != "gender")


def test_halo_coverage_is_reported_against_each_interval_s_own_estimand() -> None:
    """The default interval is for theta (coverage where theta < 1; theta = 1 is a boundary it
    holds by construction, reported apart); the paper's bootstrap is of its rate, so its
    coverage is of the rate's expectation, and theta is shown only as not its estimand."""
    h = np.array([[0.5, 0.45, 1.0], [0.55, 0.58, 1.0], [0.6, 0.62, 1.0], [0.5, 0.5, 0.9]])
    default = vi._halo_section(h, 0.6, paper=False)
    assert default["coverage_of_true_positive_share"]["coverage"] == 0.75
    assert "coverage_of_expected_halo_rate" not in default
    assert "theta" in default["estimand"]
    boundary = vi._halo_section(h, 1.0, paper=False)
    assert "coverage_of_true_positive_share" not in boundary
    assert boundary["boundary_theta_1"]["share_holding_theta"] == 0.75
    paper = vi._halo_section(h, 0.6, paper=True)
    assert paper["coverage_of_expected_halo_rate"]["coverage"] == 0.5  # expected 0.5375
    assert "coverage_of_true_positive_share" not in paper
    assert paper["not_its_estimand"]["share_holding_true_positive_share"] == 0.75


def test_a_recheck_measures_the_default_cells_the_full_run_measures(beauty) -> None:
    """A recheck's section is the default variant's section of the same table that
    :func:`run_design` writes, replicate for replicate (replicates 0 .. n - 1 of the design)."""
    design = replace(vi.SUBGROUP_DESIGNS[1], n_persons=40)
    boot = vi.Bootstrap(30, 0.95, 0)
    full = vi.run_design(design, beauty, replicates=3, boot=boot, full=False)
    for table in vi.SUBGROUP_TABLES:
        rc = vi.Recheck(design.name, table, 3, "test")
        got = vi.recheck_section(rc, beauty, boot, design)
        assert got.pop("replicates") == 3 and got.pop("run") == "rechecks"
        assert got == full[table][vi.DEFAULT_LABEL], table


def test_merging_a_recheck_replaces_only_the_default_cells(tmp_path: Path) -> None:
    """The paper's variant, the table's other keys and the other designs are kept; the record
    keeps the value the cell had before the first recheck."""
    path = tmp_path / "calibration.json"
    cell_before = {"coverage": 0.97, "k": 582, "n": 600, "cp95": [0.9, 1]}
    old = {"coverage_of_true_positive_share": cell_before}
    paper = {"coverage_of_expected_halo_rate": {"coverage": 0.968}}
    halo = {vi.DEFAULT_LABEL: old, "pooled_images (paper)": paper, "truth": "t"}
    doc = {
        "plants": {"x": 1},
        "protocols": {
            "beauty-and-the-bias": {
                "halo": {"coverage": 0.95},
                "valid_inference": {"designs": {"d": {"paired_halo": halo}, "e": {"y": 2}}},
            }
        },
    }
    path.write_text(json.dumps(doc))
    rc = vi.Recheck("d", "paired_halo", 10, "why")
    cov = {"coverage": 0.958, "k": 4598, "n": 4800, "cp95": [0.95, 0.96]}
    new = {"coverage_of_true_positive_share": cov, "run": "rechecks"}
    for _ in range(2):  # a second run keeps the first run's "before"
        vi.merge_rechecks(path, {rc: new}, {"command": "c"})
        got = json.loads(path.read_text())
        sec = got["protocols"]["beauty-and-the-bias"]
        table = sec["valid_inference"]["designs"]["d"]["paired_halo"]
        assert table[vi.DEFAULT_LABEL] == new
        assert table["pooled_images (paper)"] == paper and table["truth"] == "t"
        assert sec["valid_inference"]["designs"]["e"] == {"y": 2}
        assert got["plants"] == {"x": 1} and sec["halo"] == {"coverage": 0.95}
        cell = sec["valid_inference"]["rechecks"]["cells"]["d/paired_halo"]
        assert cell["before"] == "coverage_of_true_positive_share 0.97 [0.9, 1] (k 582, n 600)"
        assert cell["after"] == (
            "coverage_of_true_positive_share 0.958 [0.95, 0.96] (k 4598, n 4800)"
        )
        assert sec["valid_inference"]["rechecks"]["command"] == "c"


def test_only_wattr_replaces_the_default_w_attr_cell_of_the_named_design(tmp_path: Path) -> None:
    """``--only wattr`` end to end (2 replicates) on a copy of the bench file: the design's
    default W^attr cell is the new run's, its paper cell and every other table are kept, the
    run is recorded with the cell's earlier value, and the pooled rates are recomputed."""
    out = tmp_path / "calibration.json"
    out.write_text((ROOT / "reports/bench/calibration.json").read_text(encoding="utf-8"))
    before = json.loads(out.read_text())["protocols"][vi.PROTOCOL]["valid_inference"]
    name = "subgroup_null_edit_everywhere"
    argv = ["--only", "wattr", "--replicates", "2", "--designs", name, "--out", str(out)]
    assert vi.main(argv) == 0
    after = json.loads(out.read_text())["protocols"][vi.PROTOCOL]["valid_inference"]
    cell = after["designs"][name]["paired_subgroup_wilcoxon"]
    assert cell[vi.DEFAULT_LABEL]["replicates"] == 2 and cell[vi.DEFAULT_LABEL]["run"] == "wattr"
    assert (
        cell["pooled_images (paper)"]
        == (before["designs"][name]["paired_subgroup_wilcoxon"]["pooled_images (paper)"])
    )
    assert (
        after["designs"][name]["paired_group_bias_by_kind"]
        == (before["designs"][name]["paired_group_bias_by_kind"])
    )
    rec = after["wattr_run"]["designs"][name]
    assert rec["replicates"] == 2 and rec["before"] and "--only wattr" in rec["command"]
    assert after["wattr_run"]["subgroup_null_rates_pooled_over_designs"] == (
        vi.pooled_over_designs(after["designs"])
    )
