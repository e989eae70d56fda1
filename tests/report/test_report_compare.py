"""Paper-layout tables and the comparison with the paper's own numbers."""

from __future__ import annotations

import pandas as pd

from stylisticbias.config import project_root
from stylisticbias.report.paper_compare import REFERENCE_DIR, compare

REF = project_root() / REFERENCE_DIR


def test_reference_copies_are_in_the_repo():
    for f in (
        "vs_by_model",
        "per_model_effects",
        "shift_by_variation_demographic",
        "headline_numbers",
    ):
        assert (REF / f"{f}.csv").exists()


def test_paper_numbers_fed_back_give_zero_differences(tmp_path, analysis_output):
    params = analysis_output(["Gemma-3", "Gemma-4"], simulated=False)
    tables = {
        p.stem: pd.read_csv(p)
        for p in (tmp_path / params["paths"]["reports"] / "tables").glob("*.csv")
    }
    paper_vs = pd.read_csv(REF / "vs_by_model.csv")
    tables["vs_by_model"] = (
        paper_vs[paper_vs["model"].isin(["Gemma-3", "Gemma-4"])]
        .drop(columns="significance")
        .assign(dimension=lambda d: d["dimension"].replace({"body": "body_type"}))
    )
    tables["shift_by_variation_demographic"] = pd.read_csv(
        REF / "shift_by_variation_demographic.csv"
    )
    cmp = compare(tables, REF)
    assert cmp is not None and cmp.models == ["Gemma-3", "Gemma-4"]
    t2 = cmp.cells[cmp.cells["table"] == "table2"]
    assert len(t2) == 8 and set(t2["key"]) == {"Gemma-3", "Gemma-4"}
    assert t2["diff"].abs().max() == 0
    t12 = cmp.cells[cmp.cells["table"] == "table12"]
    assert len(t12) == 437 and t12["diff"].abs().max() == 0
    assert any("change of model set" in n for n in cmp.notes)


def test_no_paper_model_means_no_comparison(tmp_path, analysis_output):
    params = analysis_output(["simulated-strong", "simulated-weak"])
    tables = {
        p.stem: pd.read_csv(p)
        for p in (tmp_path / params["paths"]["reports"] / "tables").glob("*.csv")
    }
    assert "vs_by_model" in tables  # the analysis is there: no comparison because no paper model
    assert compare(tables, REF) is None


def test_table7_and_11_are_compared_under_the_papers_estimator():
    """With estimator_comparison.csv present, Table 7's shares and Table 11's rates fed to the
    comparison are the 12-draw estimator's (column ``paper``), and a note says so."""
    from stylisticbias.report.paper_compare import paper_estimator_tables

    t7 = pd.DataFrame(
        {"model": ["Gemma-3"], "sbs": [0.01], "zero_rate": [0.0], "large_shift_rate": [0.001]}
    )
    t11 = pd.DataFrame(
        {
            "model": ["Gemma-3", "Gemma-3"],
            "dimension": ["age", "body"],
            "pct_scenarios_significant": [10.0, 20.0],
        }
    )
    cmp = pd.DataFrame(
        {
            "model": ["Gemma-3"] * 4,
            "metric": [
                "zero_rate",
                "large_shift_rate",
                "pct_scenarios_significant",
                "pct_scenarios_significant",
            ],
            "dimension": ["", "", "age", "body"],
            "paper": [0.31, 0.05, 40.0, 60.0],
            "exact": [0.0, 0.001, 10.0, 20.0],
        }
    )
    tables = {
        "per_model_effects": t7,
        "significance_rate_by_model": t11,
        "estimator_comparison": cmp,
    }
    out, note = paper_estimator_tables(tables)
    assert note and "12-draw" in note
    assert out["per_model_effects"].loc[0, "zero_rate"] == 0.31
    assert out["per_model_effects"].loc[0, "large_shift_rate"] == 0.05
    assert out["significance_rate_by_model"]["pct_scenarios_significant"].tolist() == [40.0, 60.0]
    assert tables["per_model_effects"].loc[0, "zero_rate"] == 0.0  # the input is not modified
    same, none = paper_estimator_tables({"per_model_effects": t7})
    assert none is None and same["per_model_effects"] is t7
