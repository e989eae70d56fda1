"""The streaming analysis (one model at a time + cross-model step) equals the all-in-memory one.

Inputs: the demo's own judges (``simulated-strong``, ``simulated-weak``) plus two more simulated
models, on a small demo-configured dataset (paper marginals, the whitelist), judged by the
simulated engine (which never looks at pixels, so no images are rendered). One extra model lacks
some faces (the face index of the analysis is then the union) and one has no judgments file
(no diagnostics for it); one carries undecided mass (some rows above ``judge.undecided_max``, so
excluded). Every table, metrics.json and metrics_all.json are compared, the estimator
extensions included: the de-biased VS columns of Table 2, Table 3's per-cell contrast tests,
``undecided_mass.csv`` and ``estimator_comparison.csv``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from stylisticbias.analysis.calibration import synthetic_dataset
from stylisticbias.analysis.digest_memo import MEMO_FILE
from stylisticbias.analysis.metrics import cell_sums
from stylisticbias.analysis.run import (
    analyze,
    load_judgments,
    load_scores,
    run_analysis,
    write_tables,
)
from stylisticbias.analysis.settings import AnalysisSettings
from stylisticbias.analysis.streaming import add_cell_sums, code_digest
from stylisticbias.benchmark import benchmark_from_params
from stylisticbias.config import load_group_option
from stylisticbias.judge.engines.simulated.engine import SimulatedJudgeEngine, image_attrs
from stylisticbias.score_store import scores_file, write_model_scores
from stylisticbias.scores import compute_scores
from stylisticbias.spec.parse import config_from_params

DEMO_MODELS = ["simulated-strong", "simulated-weak"]
UNDECIDED_MODEL = "sim-extra-a"  # gets undecided mass in [0, 0.2] on a third of its judgments
EXTRA = {  # name -> (config base, seed, faces dropped)
    "sim-extra-a": ("simulated-strong", 301, 0),
    "sim-extra-b": ("simulated-weak", 302, 3),
}


def _judge(params, benchmark, faces, var, name: str, cfg: dict[str, Any]) -> pd.DataFrame:
    eng = SimulatedJudgeEngine(cfg, cfg["engine"], params["judge"], benchmark)
    img = image_attrs(faces, var)
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]].astype(object)
    attrs = attrs.where(attrs.notna(), None).to_dict("records")
    return eng.judge_records(img["image_id"].tolist(), img["face_id"].tolist(), attrs)


def _with_undecided(j: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Move mass u ~ U[0, 0.2] to ``p_undecided`` on a third of the rows (probabilities scaled)."""
    rng = np.random.default_rng(seed)
    u = np.where(rng.random(len(j)) < 1 / 3, rng.uniform(0.0, 0.2, len(j)), 0.0)
    j = j.copy()
    for c in ("p_pos", "p_neg", "p_invalid"):
        j[c] = j[c] * (1.0 - u)
    j["p_undecided"] = u
    return j


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory, default_params) -> tuple[Path, dict[str, Any]]:
    """A demo-configured project root with 4 models' scores (Hive) and 3 judgments files."""
    root = tmp_path_factory.mktemp("stream")
    params = copy.deepcopy(default_params)
    benchmark = benchmark_from_params(params)
    faces, var = synthetic_dataset(benchmark, 36, seed=5)
    models = [*DEMO_MODELS, *EXTRA]
    sections: dict[str, dict[str, Any]] = {}
    for name in models:
        base, seed, drop = EXTRA.get(name, (name, None, 0))
        cfg = load_group_option("model", base)
        cfg["name"] = name
        if seed is not None:
            cfg["seed"] = seed
        sections[name] = cfg
        f, v = faces, var
        if drop:
            gone = set(faces["face_id"].iloc[:drop])
            f, v = faces[~faces.face_id.isin(gone)], var[~var.face_id.isin(gone)]
        j = _judge(params, benchmark, f, v, name, cfg)
        if name == UNDECIDED_MODEL:
            j = _with_undecided(j, seed=11)
        if name != "sim-extra-b":  # no judgments file: no diagnostics for this model
            jp = root / "judgments" / name / "judgments.parquet"
            jp.parent.mkdir(parents=True)
            j.to_parquet(jp, index=False)
        write_model_scores(compute_scores(j, f, v, benchmark), root / "scores", name)
    params["models"] = sections
    params["paths"].update(
        scores=str(root / "scores"),
        judgments=str(root / "judgments"),
        reports=str(root / "reports"),
        analysis_cache=str(root / "cache"),
    )
    # 100 resamples/permutations: the comparisons below are exact equalities of two code paths
    # on the same draws, whatever their number
    params["analysis"]["bootstrap"]["n_resamples"] = 100
    params["analysis"]["n_permutations"] = 100
    return root, params


def _reference(params: dict[str, Any], out: Path) -> dict[str, pd.DataFrame]:
    """The all-models-in-memory analysis, written like the stage writes."""
    s = AnalysisSettings.from_config(params["analysis"])
    benchmark = benchmark_from_params(params)
    models = list(params["models"])
    scores = load_scores(Path(params["paths"]["scores"]), models)
    judg = Path(params["paths"]["judgments"])
    judgments = {m: load_judgments(judg / m / "judgments.parquet") for m in models}
    simulated = {m: bool(g["simulated"].any()) for m, g in scores.groupby("model", observed=True)}
    tables = analyze(scores, benchmark, s, judgments)
    write_tables(tables, simulated, models, benchmark, s, out)
    return tables


@pytest.fixture(scope="module")
def reference(demo_root) -> tuple[Path, dict[str, pd.DataFrame]]:
    """The all-in-memory analysis of ``demo_root`` (its folder, its tables), once per module."""
    root, params = demo_root
    return root / "ref", _reference(params, root / "ref")


@pytest.fixture(scope="module")
def streamed(demo_root) -> Any:
    """The ``analyze`` stage (streaming, an empty cache) on ``demo_root``: its run statistics;
    the tables in ``root/reports``. Once per module: the tests below only read them."""
    _, params = demo_root
    return run_analysis(config_from_params(params))


def _assert_same_csv(a: Path, b: Path) -> None:
    """Same columns, rows, text cells; numbers within 1e-9 relative (summation order)."""
    x, y = pd.read_csv(a, keep_default_na=False), pd.read_csv(b, keep_default_na=False)
    assert list(x.columns) == list(y.columns), a.name
    assert x.shape == y.shape, a.name
    for c in x.columns:
        xn = pd.to_numeric(x[c].replace("", np.nan), errors="coerce")
        yn = pd.to_numeric(y[c].replace("", np.nan), errors="coerce")
        if xn.notna().sum() == (x[c] != "").sum() and len(x):  # a numeric column
            np.testing.assert_allclose(xn, yn, rtol=2e-6, atol=1e-12, err_msg=f"{a.name}:{c}")
        else:
            assert x[c].tolist() == y[c].tolist(), f"{a.name}:{c}"


def _assert_same_json(ref_path: Path, ours_path: Path) -> None:
    m_ref = json.loads(ref_path.read_text())
    m_ours = json.loads(ours_path.read_text())
    assert m_ref.keys() == m_ours.keys()
    flat_ref, flat_ours = pd.json_normalize(m_ref), pd.json_normalize(m_ours)
    assert list(flat_ref.columns) == list(flat_ours.columns)
    for c in flat_ref.columns:
        a, b = flat_ref[c].iloc[0], flat_ours[c].iloc[0]
        if isinstance(a, float) and isinstance(b, float):
            assert a == pytest.approx(b, rel=1e-9, abs=1e-12), c
        else:
            assert a == b, c


def test_streaming_equals_in_memory_on_every_table(demo_root, reference, streamed) -> None:
    root, params = demo_root
    ref_dir, ref = reference
    stats = streamed
    assert sorted(stats.computed) == sorted(params["models"]) and not stats.cached
    ours = root / "reports" / "tables"
    names = sorted(p.name for p in (ref_dir / "tables").glob("*.csv"))
    assert names == sorted(p.name for p in ours.glob("*.csv"))
    assert len(names) == len(ref) == 38  # long tables + the paper-layout ones (write_tables)
    assert "position_bias.csv" in names and "model_pair_regressions.csv" in names
    assert "undecided_mass.csv" in names and "estimator_comparison.csv" in names
    for n in names:
        _assert_same_csv(ref_dir / "tables" / n, ours / n)
    for name in ("metrics.json", "metrics_all.json"):
        _assert_same_json(ref_dir / name, root / "reports" / name)

    # the extra model without judgments has no diagnostics; the one lacking faces is analysed
    pos = pd.read_csv(ours / "position_bias.csv")
    assert "sim-extra-b" not in set(pos.model) and len(pos) == 3
    t7 = pd.read_csv(ours / "per_model_effects.csv").set_index("model")
    assert t7.loc["sim-extra-b", "n_faces"] == 33 and t7.loc["sim-extra-a", "n_faces"] == 36
    # the estimator extensions are really there (so the comparison above covers them)
    vs = pd.read_csv(ours / "vs_by_model.csv")
    for c in ("vs_debiased", "debiased_ci_low", "debiased_ci_high", "noise_floor"):
        assert vs[c].notna().sum() >= 16, c
    t3 = pd.read_csv(ours / "sbs_category_by_demographic.csv")
    assert t3["pval"].notna().sum() >= 8 and t3["n_cells"].max() > 1
    und = pd.read_csv(ours / "undecided_mass.csv", keep_default_na=False)
    assert list(und[und.category == "all"].model) == sorted(params["models"])
    a = und[(und.model == UNDECIDED_MODEL) & (und.category == "all")].iloc[0]
    assert a.n_excluded > 0 and a.undecided_max > 0.05 and a.sbs_high - a.sbs_low > 0.005
    others = und[(und.model != UNDECIDED_MODEL)]
    assert (others.undecided_max == 0).all() and (others.n_excluded == 0).all()
    est = pd.read_csv(ours / "estimator_comparison.csv", keep_default_na=False)
    assert set(est.model) == set(params["models"])
    assert set(est.metric) == {"sbs", "zero_rate", "large_shift_rate", "pct_scenarios_significant"}


def test_the_comparison_detects_a_per_model_correction(demo_root, reference, streamed) -> None:
    """Control: correcting p-values within each model (not across models) is caught."""
    root, _ = demo_root
    ref_dir, _ = reference
    ours = root / "reports" / "tables"
    df = pd.read_csv(ours / "sbs_by_scenario.csv")
    per = df[df.model != "All"].copy()
    from stylisticbias.analysis.significance import p_adjust

    wrong = per.groupby("model", group_keys=False)["pval"].apply(
        lambda p: pd.Series(p_adjust(p.to_numpy(), "fdr_bh"), index=p.index)
    )
    df.loc[per.index, "pval_corr"] = wrong
    bad = root / "bad.csv"
    df.to_csv(bad, index=False, float_format="%.6g")
    with pytest.raises(AssertionError):
        _assert_same_csv(ref_dir / "tables" / "sbs_by_scenario.csv", bad)


# slow tier: a second streamed analysis of the demo (~12 CPU-s); fast siblings:
# test_streaming_equals_in_memory_on_every_table, tests/analysis/test_digest_memo.py
@pytest.mark.slow
def test_adding_a_model_recomputes_only_that_model(demo_root, streamed, tmp_path) -> None:
    root, params = demo_root
    p = copy.deepcopy(params)
    p["paths"]["analysis_cache"] = str(tmp_path / "cache")
    p["paths"]["reports"] = str(tmp_path / "reports")
    first = list(p["models"])[:3]
    p["models"] = {m: params["models"][m] for m in first}
    stats = run_analysis(config_from_params(p))
    assert sorted(stats.computed) == sorted(first)
    p["models"] = params["models"]  # + sim-extra-b
    stats = run_analysis(config_from_params(p))
    assert stats.computed == ("sim-extra-b",) and sorted(stats.cached) == sorted(first)
    # the incremental result equals a from-scratch run (``streamed``: an empty cache, every
    # model computed)
    assert sorted(streamed.computed) == sorted(params["models"]) and not streamed.cached
    fresh = sorted((root / "reports" / "tables").glob("*.csv"))
    assert len(fresh) == 38
    for f in fresh:
        _assert_same_csv(f, tmp_path / "reports" / "tables" / f.name)
    # a changed score file (same model) is recomputed; removing a model prunes its entry
    sf = scores_file(p["paths"]["scores"], "simulated-weak")
    before = sf.read_bytes()
    try:
        df = pd.read_parquet(sf)
        df.loc[df.index[-1], "phi"] = 0.5
        df.to_parquet(sf, index=False)
        p["models"] = {m: params["models"][m] for m in ("simulated-strong", "simulated-weak")}
        stats = run_analysis(config_from_params(p))
        assert stats.computed == ("simulated-weak",) and stats.cached == ("simulated-strong",)
        entries = (x.name for x in (tmp_path / "cache").iterdir() if x.name != MEMO_FILE)
        assert sorted(entries) == sorted(["simulated-strong", "simulated-weak"])
    finally:
        sf.write_bytes(before)
    # another analysis setting invalidates every entry
    p["analysis"]["bootstrap"]["ci"] = 0.9
    assert run_analysis(config_from_params(p)).cached == ()


def test_add_cell_sums_equals_sums_over_all_rows(synth) -> None:
    """Pooling per-model sums = binning all models' rows at once (cells in the same order)."""
    d = synth[~synth.is_base].copy()
    d.loc[d.sample(frac=0.1, random_state=0).index, "delta"] = np.nan
    d = d[~((d.model == "m2") & (d.attribute == d.attribute.iloc[0]))]  # a cell only m1 has
    faces = pd.Index(np.sort(d.face_id.unique()))
    by = ["attribute", "value", "age"]
    whole, _ = cell_sums(d, by, faces=faces)
    acc = None
    for _, g in d.groupby("model"):
        acc = add_cell_sums(acc, cell_sums(g, by, faces=faces)[0])
    assert acc is not None
    pd.testing.assert_frame_equal(acc.keys, whole.keys)
    np.testing.assert_allclose(acc.num, whole.num, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(acc.den, whole.den)
    np.testing.assert_allclose(acc.absum, whole.absum, rtol=1e-12)


def test_code_digest_covers_the_subpackages(tmp_path: Path) -> None:
    """A change in ``analysis/official_analyses/effects.py`` invalidates the cache too."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "run.py").write_text("x = 1\n")
    (tmp_path / "sub" / "effects.py").write_text("y = 1\n")
    before = code_digest(tmp_path)
    assert code_digest(tmp_path) == before
    (tmp_path / "sub" / "effects.py").write_text("y = 2\n")
    edited = code_digest(tmp_path)
    assert edited != before
    (tmp_path / "sub" / "effects.py").rename(tmp_path / "sub" / "other.py")  # a move counts
    assert code_digest(tmp_path) != edited
    assert code_digest() != code_digest(tmp_path)  # the package's own folder by default
