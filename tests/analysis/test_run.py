"""The analyze stage end to end on synthetic score tables, and its one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from stylisticbias.analysis.layout import UNTESTED
from stylisticbias.analysis.run import run_analysis
from stylisticbias.config import project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.score_store import scores_file, write_model_scores
from stylisticbias.spec.parse import config_from_params

PAPER_FILES = [
    "vs_by_model",
    "sbs_category_by_demographic",
    "sbs_fashion_by_age",
    "tattoo_sbs",
    "sbs_fashion_by_body",
    "per_model_effects",
    "significance_rate_by_model",
    "shift_by_variation_demographic",
]
REF = project_root() / "conf" / "reference" / "paper"  # the paper's tables as CSV


def _params(default_params: dict[str, Any], tmp_path: Path, models: list[str]) -> dict[str, Any]:
    p = json.loads(json.dumps(default_params))
    section = default_params["models"]["simulated-weak"]  # a complete model section
    p["models"] = {m: {**section, "name": m, "paper_name": None} for m in models}
    p["paths"].update(
        scores=str(tmp_path / "scores"),
        judgments=str(tmp_path / "judgments"),
        reports=str(tmp_path / "reports"),
        analysis_cache=str(tmp_path / "analysis"),  # never the project's data/analysis
    )
    p["analysis"]["bootstrap"]["n_resamples"] = 100
    p["analysis"]["n_permutations"] = 100
    return p


def _write(synth: pd.DataFrame, tmp_path: Path) -> None:
    for m, g in synth.groupby("model"):
        write_model_scores(g, tmp_path / "scores", str(m))


def _raw(df: pd.DataFrame, tmp_path: Path, model: str) -> None:
    """Write a partition as is (no validation), as a foreign writer might."""
    df.to_parquet(scores_file(tmp_path / "scores", model), index=False)


def test_run_analysis_writes_every_table(synth, default_params, tmp_path) -> None:
    _write(synth, tmp_path)
    run_analysis(config_from_params(_params(default_params, tmp_path, ["m1", "m2"])))
    out = tmp_path / "reports" / "tables"
    for f in PAPER_FILES:
        ours = pd.read_csv(out / f"{f}.csv")
        if (REF / f"{f}.csv").exists():  # same leading columns as the paper's CSV
            ref_cols = list(pd.read_csv(REF / f"{f}.csv", nrows=1).columns)
            assert list(ours.columns[: len(ref_cols)]) == ref_cols, f
    t12 = pd.read_csv(out / "shift_by_variation_demographic.csv")
    assert len(t12) == 442 and t12.applicable.sum() == 437
    wide = pd.read_csv(out / "table12_shift.csv")
    assert list(wide.columns[2:]) == [
        "YA",
        "MA",
        "EL",
        "M",
        "F",
        "As",
        "Af",
        "Eu",
        "ME",
        "La",
        "Th",
        "No",
        "Ob",
    ]
    assert len(wide) == 34
    # untested cells (Average rows, Table 4's Y-E gap) carry the untested mark, never plain
    t2 = pd.read_csv(out / "table02_vs.csv")
    assert all(str(v).endswith(UNTESTED) for v in t2[t2.iloc[:, 0] == "Average"].iloc[0, 1:])
    t4 = pd.read_csv(out / "table04_fashion_age.csv")
    assert all(v == "-" or str(v).endswith(UNTESTED) for v in t4["Y-E"])
    assert not t4["Young"].astype(str).str.endswith(UNTESTED).all()
    for f in [
        "sbs_by_scenario",
        "pareto",
        "cross_model_variance",
        "model_pair_regressions",
        "profile_agreement",
        "table02_vs",
        "table07_model_effects",
    ]:
        assert (out / f"{f}.csv").exists(), f
    vs = pd.read_csv(out / "vs_by_model.csv")
    assert (vs.model == "Average").sum() == 4 and vs.simulated.all()
    head = json.loads((tmp_path / "reports" / "metrics.json").read_text())
    assert set(head) == {"m1", "m2"} and set(head["m1"]) == {  # the DVC metrics: headline only
        "sbs",
        "sbs_ci_low",
        "sbs_ci_high",
        "significant_share",
        "invalid_rate",
    } - ({"invalid_rate"} if "invalid_rate" not in head["m1"] else set())
    assert head["m1"]["sbs_ci_low"] < head["m1"]["sbs"] < head["m1"]["sbs_ci_high"]
    metrics = json.loads((tmp_path / "reports" / "metrics_all.json").read_text())
    m1 = metrics["m1"]
    assert m1["sbs"]["overall"] == pytest.approx(head["m1"]["sbs"], rel=1e-5)
    assert set(m1["vs"]) == {"age", "gender", "ethnicity", "body_type"}
    assert "fashion" in m1["sbs"]["category"] and "stylish" in m1["sbs"]["scenario"]
    assert m1["pareto"]["n_variations_80"] >= 1 and "cohens_d" in m1


def test_stage_errors(synth, default_params, tmp_path) -> None:
    _write(synth, tmp_path)
    p = _params(default_params, tmp_path, ["m1", "m9"])
    with pytest.raises(StylisticBiasError, match=r"model=m9/part-0\.parquet: not found.*scores@m9"):
        run_analysis(config_from_params(p))
    synth[synth.model == "m1"].to_parquet(tmp_path / "scores" / "m9.parquet", index=False)
    with pytest.raises(StylisticBiasError, match=r"m9\.parquet: .*old one-file layout.*scores@m9"):
        run_analysis(config_from_params(p))
    _raw(synth[synth.model == "m2"], tmp_path, "m1")
    with pytest.raises(StylisticBiasError, match=r"m1/part-0\.parquet: holds rows of model.*m2"):
        run_analysis(config_from_params(_params(default_params, tmp_path, ["m1"])))
    old = synth[synth.model == "m1"].rename(columns={"delta": "shift"})
    _raw(old, tmp_path, "m1")
    with pytest.raises(StylisticBiasError, match=r"m1/part-0\.parquet.*missing column\(s\) delta"):
        run_analysis(config_from_params(_params(default_params, tmp_path, ["m1"])))
    _raw(synth[(synth.model == "m1") & ~synth.is_base], tmp_path, "m1")
    with pytest.raises(StylisticBiasError, match=r"m1.*no base-face scores"):
        run_analysis(config_from_params(_params(default_params, tmp_path, ["m1"])))
    nan_base = synth[synth.model == "m1"].copy()
    nan_base.loc[nan_base.is_base, "phi"] = float("nan")
    nan_base.loc[nan_base.is_base, "n_valid"] = 0
    nan_base.loc[~nan_base.is_base, "delta"] = float("nan")
    _raw(nan_base, tmp_path, "m1")
    with pytest.raises(StylisticBiasError, match=r"m1/part-0\.parquet: model 'm1' has no valid"):
        run_analysis(config_from_params(_params(default_params, tmp_path, ["m1"])))
    bad = default_params | {"analysis": {**default_params["analysis"], "correction": "sidak?"}}
    with pytest.raises(StylisticBiasError, match="correction"):
        run_analysis(config_from_params(_params(bad, tmp_path, ["m2"])))


def test_missing_scenario_and_single_model(synth, default_params, tmp_path) -> None:
    """A scenario absent from one model's scores, and a run with one model, both complete."""
    gap = synth[~((synth.model == "m2") & (synth.scenario_id == 7))]
    _write(gap, tmp_path)
    run_analysis(config_from_params(_params(default_params, tmp_path, ["m1", "m2"])))
    out = tmp_path / "reports" / "tables"
    by_sc = pd.read_csv(out / "sbs_by_scenario.csv")
    have = by_sc[by_sc.model.isin(["m1", "m2"])]
    assert not ((have.model == "m2") & (have.scenario_id == 7)).any()
    assert ((have.model == "m1") & (have.scenario_id == 7)).sum() == 1
    # SBS of m2 per scenario is the plain mean of its deltas (pandas re-derivation)
    d = gap[(gap.model == "m2") & gap.delta.notna()]
    ref = d.groupby("scenario_id").delta.mean()
    ours = have[have.model == "m2"].set_index("scenario_id").sort_index()
    assert list(ours.index) == list(ref.index)
    assert ours.sbs.to_numpy() == pytest.approx(ref.to_numpy(), rel=1e-5)  # CSV: 6 digits
    cmv = pd.read_csv(out / "cross_model_variance.csv").set_index("scenario_id")
    assert cmv.loc[7, "n_models"] == 1 and pd.isna(cmv.loc[7, "variance"])

    single = tmp_path / "single"
    single.mkdir()
    _write(synth[synth.model == "m1"], single)
    run_analysis(config_from_params(_params(default_params, single, ["m1"])))
    tables = single / "reports" / "tables"
    assert pd.read_csv(tables / "vs_by_model.csv").model.isin(["m1", "Average"]).all()
    reg = tables / "model_pair_regressions.csv"
    assert not reg.exists() or pd.read_csv(reg).empty
