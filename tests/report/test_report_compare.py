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


def test_paper_numbers_fed_back_give_zero_differences(tmp_path, fake_analysis):
    fake_analysis(["Gemma-3", "Gemma-4"], simulated=False)
    tables = {p.stem: pd.read_csv(p) for p in (tmp_path / "reports" / "tables").glob("*.csv")}
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


def test_no_paper_model_means_no_comparison(tmp_path, fake_analysis):
    fake_analysis(["simulated-strong", "simulated-weak"])
    tables = {p.stem: pd.read_csv(p) for p in (tmp_path / "reports" / "tables").glob("*.csv")}
    assert compare(tables, REF) is None
