"""The table registry is the contract of the ``analyze`` stage's outputs.

It covers exactly the files the stage writes (the real stage on small simulated data, with
judgments, two models and both estimators, writes every registered table; one model writes
every table it must), every written table reads back through it, and a renamed column, a
value out of range or an unregistered table fails in one line naming the table and column.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from stylisticbias.analysis import table_registry as reg
from stylisticbias.analysis.layout import fmt, strong_mark
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.errors import StylisticBiasError

TWO = ("simulated-strong", "simulated-weak")


def _tables(root: Path) -> Path:
    return root / "reports" / "stylisticbias" / "tables"  # the default protocol's paths.reports


def test_every_column_is_a_vocabulary_word_and_every_schema_builds() -> None:
    for t in reg.TABLES:
        if not t.layout:
            assert set(t.columns) <= set(reg.VOCABULARY), t.name
            assert "simulated" in t.columns and set(t.keys) <= set(t.columns), t.name
        assert reg.schema(t.name).name == t.name
    assert len(reg.REGISTRY) == len(reg.TABLES) + len(reg.PAIRED_TABLES)  # names unique
    # one vocabulary: the quantity SBS has one name, pairs of models one pair of names
    used = {c for t in reg.TABLES if not t.layout for c in t.columns}
    assert not used & {"effect", "abs_effect", "cum_abs_effect", "model_a", "model_b"}


def test_registry_covers_exactly_the_written_files(analysed) -> None:
    root, _ = analysed(TWO, True)
    written = {p.name for p in _tables(root).glob("*.csv")}
    assert written == {t.file for t in reg.TABLES}


def test_one_model_writes_every_table_it_must(analysed) -> None:
    root, _ = analysed(TWO[:1], True)
    written = {p.name for p in _tables(root).glob("*.csv")}
    assert written <= {t.file for t in reg.TABLES}
    assert {reg.spec(n).file for n in reg.ALWAYS_WRITTEN} <= written
    assert {t.file for t in reg.TABLES if t.layout} <= written


def test_every_written_table_reads_back_through_the_registry(analysed) -> None:
    root, _ = analysed(TWO, True)
    for t in reg.TABLES:
        df = reg.read_table(t.name, _tables(root))
        assert len(df) > 0, t.name
        if not t.layout:
            assert list(df.columns) == list(t.columns), t.name


def test_a_renamed_column_fails_naming_the_table_and_the_column(analysed, tmp_path) -> None:
    root, _ = analysed(TWO, True)
    out = tmp_path / "tables"
    shutil.copytree(_tables(root), out)
    path = out / "sbs_by_category_model.csv"
    df = pd.read_csv(path).rename(columns={"sbs": "effect"})
    df.to_csv(path, index=False)
    msg = r"sbs_by_category_model\.csv: table 'sbs_by_category_model' .*missing column\(s\) sbs; "
    with pytest.raises(StylisticBiasError, match=msg + r"unexpected column\(s\) effect"):
        reg.read_table("sbs_by_category_model", out)
    # the writer refuses it too, before anything is written
    with pytest.raises(StylisticBiasError, match=r"'sbs_by_category_model'.*missing.*sbs"):
        reg.write_tables({"sbs_by_category_model": df}, tmp_path / "new")
    assert not (tmp_path / "new" / "sbs_by_category_model.csv").exists()
    # a paper-layout table's key column renamed
    wide = out / "table02_vs.csv"
    pd.read_csv(wide, dtype=str).rename(columns={"Model": "model"}).to_csv(wide, index=False)
    with pytest.raises(StylisticBiasError, match=r"'table02_vs'.*missing column\(s\) Model"):
        reg.read_table("table02_vs", out)


def test_a_value_out_of_range_names_the_column_and_row(analysed, tmp_path) -> None:
    root, _ = analysed(TWO, True)
    df = pd.read_csv(_tables(root) / "pareto.csv")
    df.loc[3, "cum_share"] = 1.5
    with pytest.raises(StylisticBiasError, match=r"pareto.*'cum_share'.*row 3"):
        reg.validate_table("pareto", df)
    df = pd.read_csv(_tables(root) / "sbs_overall.csv")
    df["pval"] = "small"
    with pytest.raises(StylisticBiasError, match=r"sbs_overall.*'pval'"):
        reg.validate_table("sbs_overall", df)


def test_an_unregistered_table_is_refused(tmp_path) -> None:
    with pytest.raises(StylisticBiasError, match=r"unknown analysis table 'extra_table'; valid: "):
        reg.write_tables({"extra_table": pd.DataFrame({"model": ["a"]})}, tmp_path)
    assert not any(tmp_path.iterdir())


def test_missing_file_names_it_and_the_stage(tmp_path) -> None:
    with pytest.raises(StylisticBiasError, match=re.escape("pareto.csv: not found") + ".*analyze"):
        reg.read_table("pareto", tmp_path)


def test_marks_and_headers_follow_the_settings() -> None:
    """The bold mark is corrected p < analysis.strong_alpha, Table 7's header reads
    analysis.large_shift: a change of either setting changes the printed tables."""
    s = AnalysisSettings(strong_alpha=0.01, large_shift=0.3)
    assert strong_mark(s) == "p<0.01"
    assert fmt(0.05, mark="p<0.01", strong=strong_mark(s)) == "**+0.050**"
    assert fmt(0.05, mark="p<0.001", strong=strong_mark(s)) == "+0.050"  # plain: significant
    assert fmt(0.05, mark="p<0.001") == "**+0.050**"  # the default settings
    assert reg.large_shift_header(s.large_shift) == "|Δ| ≥ 0.3"
    assert reg.large_shift_header(AnalysisSettings().large_shift) == "|Δ| ≥ 0.25"
