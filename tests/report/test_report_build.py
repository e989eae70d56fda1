"""The report stage end to end on the real analysis of small simulated data (no MLflow)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from PIL import Image

from stylisticbias.config import project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.report.run import build_report
from stylisticbias.score_store import scores_file
from stylisticbias.spec.parse import config_from_params

FIGS = [
    "fig2_cumulative_abs_sbs",
    "fig3_sbs_by_scenario",
    "fig4_scenario_sensitivity",
    "fig5_abs_sbs_by_scenario_category_model",
    "fig6_attribute_profiles",
    "fig7_cross_model_variance",
    "fig8_model_pair",
    "diag_position_bias",
    "diag_letter_bias",
    "diag_invalid_rates",
]


def _report(tmp_path: Path, params: dict) -> str:
    params["tracking"]["enabled"] = False
    shutil.copytree(project_root() / "conf" / "reference", tmp_path / "conf" / "reference")
    build_report(config_from_params(params), tmp_path)
    return (tmp_path / params["paths"]["reports"] / "README.md").read_text(encoding="utf-8")


def test_simulated_report_has_every_figure_table_and_the_label(tmp_path, report_output):
    params = report_output(["simulated-strong", "simulated-weak"], simulated=True)  # once a session
    reports = tmp_path / params["paths"]["reports"]
    md = (reports / "README.md").read_text(encoding="utf-8")
    assert md.splitlines()[0] == "# StylisticBias report — SIMULATED data"
    for name in FIGS:
        png = reports / "figures" / f"{name}.png"
        assert png.exists(), name
        with Image.open(png) as im:
            assert im.width > 500 and im.height > 300
        assert f"(figures/{name}.png)" in md
    assert not (reports / "figures" / "fig8_model_pairs_all.png").exists()
    for t in (
        "Table 2.",
        "Table 3.",
        "Table 4.",
        "Table 5.",
        "Table 6.",
        "Table 7.",
        "Table 11.",
        "Table 12.",
    ):
        assert f"### {t}" in md
    wide = (reports / "tables" / "table02_vs.csv").read_text().splitlines()
    assert "| " + wide[1].replace(",", " | ") + " |" in md  # embedded as analyze wrote it
    assert "nothing to compare" in md
    assert "Not estimable" not in md  # everything is, on this design: no empty section
    # read-through polish: no HTML entities; headline bullets carry intervals / significance;
    # "weakest" says what it means; the two category aggregations are named
    import re

    assert not re.search(r"&(#[0-9]+|#x[0-9a-f]+|[a-z][a-z0-9]*);", md, re.I), "HTML entity"
    head = md.split("## Headline findings", 1)[1].split("\n## ", 1)[0]
    assert "weakest (smallest \\|SBS\\|)" in head and "95% CI [" in head
    assert "corrected p" in head and "significant in" in head
    assert "mean \\|SBS\\| (the mean over a category's scenarios" in head
    assert "\\|mean SBS\\|" in head and "|mean SBS| by scenario category and model" in md
    assert "docs/statistics.md" in md


def test_dvc_plots_entries_point_at_written_columns(tmp_path, report_output):
    report_output(["simulated-strong", "simulated-weak"], simulated=True)
    entries = yaml.safe_load((project_root() / "dvc.yaml").read_text())["plots"]
    for entry in entries:
        if isinstance(entry, str):
            assert (tmp_path / entry).is_dir()
            continue
        ((path, spec),) = entry.items()
        cols = pd.read_csv(tmp_path / path).columns
        assert spec["x"] in cols and spec["y"] in cols, path
        # drawn by a template of the project's (.dvc/plots/) that shows the data's caveat
        assert (project_root() / ".dvc" / "plots" / f"{spec['template']}.json").is_file(), path


def test_plot_data_carries_the_simulated_caveat_only_from_simulated_judges(tmp_path) -> None:
    from stylisticbias.report.run import PLOT_CAVEAT, write_plot_data

    frames = {"pareto": pd.DataFrame({"rank": [1, 2], "cum_share": [0.6, 1.0]})}
    write_plot_data(frames, tmp_path / "sim", simulated=True)
    assert (pd.read_csv(tmp_path / "sim" / "pareto.csv")["caveat"] == PLOT_CAVEAT).all()
    assert "SIMULATED" in PLOT_CAVEAT
    write_plot_data(frames, tmp_path / "real", simulated=False)
    assert list(pd.read_csv(tmp_path / "real" / "pareto.csv").columns) == ["rank", "cum_share"]


# slow tier: a report with the paper's models (~8 CPU-s); fast sibling:
# tests/report/test_report_compare.py::test_paper_numbers_fed_back_give_zero_differences
@pytest.mark.slow
def test_paper_models_get_a_comparison_and_the_gemma_pair(tmp_path, analysis_output):
    params = analysis_output(["Gemma-3", "Gemma-4", "Qwen3"], simulated=False)
    md = _report(tmp_path, params)
    assert "SIMULATED" not in md.splitlines()[0]
    assert "Paper models in this run: Gemma-3, Gemma-4, Qwen3" in md
    assert "Fig. 8. Gemma-3 vs. Gemma-4" in md
    assert "Pearson r, Gemma-3 vs Gemma-4 (Fig. 8)" in md
    assert (tmp_path / params["paths"]["reports"] / "figures" / "fig8_model_pairs_all.png").exists()


def test_missing_table_names_the_file_and_the_stage(tmp_path, analysis_output):
    params = analysis_output(["simulated-strong"], simulated=True)
    (tmp_path / params["paths"]["reports"] / "tables" / "pareto.csv").unlink()
    with pytest.raises(StylisticBiasError, match=r"pareto\.csv: not found.*`analyze` stage"):
        _report(tmp_path, params)


def test_missing_scores_names_the_scores_stage(tmp_path, analysis_output):
    params = analysis_output(["simulated-strong"], simulated=True)
    scores_file(tmp_path / params["paths"]["scores"], "simulated-strong").unlink()
    with pytest.raises(StylisticBiasError, match=r"model=simulated-strong.*: not found.*scores@"):
        _report(tmp_path, params)


def test_user_strings_reach_the_report_inert() -> None:
    """Model names, values and file names may come from user config or imported files."""
    import pandas as pd

    from stylisticbias.report.markdown import md_escape, md_table

    evil = "<script>alert(1)</script>"
    table = md_table(pd.DataFrame({"model": [evil], "value": [f"a|b {evil}"]}))
    assert "<script" not in table.replace("\\<script", "") and "\\<script>" in table
    assert "<script" not in md_escape(f"Largest |SBS|: {evil} (0.1)").replace("\\<", "")
    assert md_escape("<u>-0.002</u>") == "<u>-0.002</u>"  # the analysis' own mark survives
    # no HTML entities: a plain & or < stays, what could start an entity or a tag is escaped
    assert md_escape("Makeup & lips, p < 0.05") == "Makeup & lips, p < 0.05"
    assert md_escape("a &amp; b &#60; c") == "a \\&amp; b \\&#60; c"
    assert md_escape("<img src=x>") == "\\<img src=x>"


def test_p_values_below_a_thousandth_read_as_such() -> None:
    import pandas as pd

    from stylisticbias.report.markdown import format_p, md_table

    assert format_p(0.0004) == "< 0.001" and format_p(0.001) == "0.001"
    assert format_p(0.04567) == "0.046"
    table = md_table(pd.DataFrame({"pval": [1e-9, 0.2], "pval_corr": [3e-4, 0.5], "x": [1e-9, 2]}))
    assert table.count("< 0.001") == 2 and "0.000" in table  # x is no p-value


def _files(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


# slow tier: two report builds (~9 CPU-s); fast sibling:
# test_missing_table_names_the_file_and_the_stage
@pytest.mark.slow
def test_a_report_that_fails_midway_leaves_the_previous_one_whole(
    tmp_path, analysis_output, monkeypatch
):
    """Figures and plot data are built beside ``reports/`` and swapped in only when complete:
    a run that dies after a few figures deletes none and half-writes none."""
    from stylisticbias.report import figures

    params = analysis_output(["simulated-strong", "simulated-weak"], simulated=True)
    _report(tmp_path, params)
    reports = tmp_path / params["paths"]["reports"]
    before = _files(reports)
    save, calls = figures.save, []

    def dies_on_the_fourth(fig, path):
        calls.append(path)
        if len(calls) == 4:
            path.write_bytes(b"\x89PNG half")  # as a kill in the middle of savefig would
            raise KeyboardInterrupt  # SIGINT-like: no cleanup code runs
        return save(fig, path)

    monkeypatch.setattr(figures, "save", dies_on_the_fourth)
    with pytest.raises(KeyboardInterrupt):
        build_report(config_from_params(params), tmp_path)
    after = {k: v for k, v in _files(reports).items() if not k.startswith(".")}
    assert after == before
    monkeypatch.setattr(figures, "save", save)
    build_report(config_from_params(params), tmp_path)  # the next run removes the leftovers
    assert _files(reports) == before


def test_fig8_draws_the_ols_of_its_points_and_names_the_tables_slope(tmp_path, report_output):
    """Fig. 8's line is the OLS of the points it shows (np.polyfit of the per-scenario means);
    the table's cross-fitted slope (the test) is named beside it, not drawn as if it were."""
    import re

    import numpy as np

    params = report_output(["simulated-strong", "simulated-weak"], simulated=True)
    reports = tmp_path / params["paths"]["reports"]
    md = (reports / "README.md").read_text(encoding="utf-8")
    cap = next(ln for ln in md.splitlines() if ln.startswith("*Fig. 8."))
    sbs = pd.read_csv(reports / "tables" / "sbs_by_scenario.csv")
    wide = sbs[sbs["model"] != "All"].pivot(index="scenario_id", columns="model", values="sbs")
    x, y = wide["simulated-strong"], wide["simulated-weak"]
    slope = np.polyfit(x, y, 1)[0]
    got = float(re.search(r"OLS of the points slope (-?[0-9.]+)", cap).group(1))
    assert got == pytest.approx(slope, abs=0.006)
    reg = pd.read_csv(reports / "tables" / "model_pair_regressions.csv").iloc[0]
    assert f"the table's slope {reg['slope']:.2f}" in cap
