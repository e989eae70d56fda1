"""The simulated judge: determinism, letter/pole mapping, planted truth, speed, config errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from judge_tables import make_tables

from stylisticbias.benchmark import Benchmark, load_benchmark
from stylisticbias.config import load_group_option, load_params, project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.base import ImageItem
from stylisticbias.judge.engines.factory import make_engine
from stylisticbias.judge.engines.simulated.engine import (
    DEFAULT_PLANTED,
    SimulatedJudgeEngine,
    load_planted,
    planted_truth,
)
from stylisticbias.judge.engines.simulated.planted import planted_source, protocol_planted
from stylisticbias.protocols import judged
from stylisticbias.schemas import JUDGMENTS, validate

JUDGE = {"orderings": [1, 2, 3, 4], "seeds": [1, 2, 3], "scenarios": "all"}
ENGINE = {"name": "simulated", "decoding": "simulated", "planted": "conf/planted/default.yaml"}


def _items(benchmark: Benchmark, n: int) -> list[ImageItem]:
    vals = [v for v in benchmark.variations if v.evaluated and v.gender_scope == "all"]
    out = []
    for i in range(n):
        attrs = {"age": "elderly", "gender": "female", "ethnicity": "Asian", "body_type": "obese"}
        if i % 3:
            v = vals[i % len(vals)]
            attrs.update(attribute=v.attribute, value=v.value, category=v.category)
        else:
            attrs.update(attribute=None, value=None, category=None)
        out.append(ImageItem(f"img{i:04d}", f"f{i // 3}", "/nonexistent.png", i % 3 == 0, attrs))
    return out


@pytest.fixture(scope="module")
def strong() -> dict:
    return load_group_option("model", "simulated-strong")


def test_records_schema_mapping_and_probabilities(benchmark: Benchmark, strong: dict) -> None:
    eng = make_engine({**strong, "engine": ENGINE}, JUDGE, benchmark)  # its _target_
    assert isinstance(eng, SimulatedJudgeEngine) and eng.reads_pixels is False
    items = _items(benchmark, 12)
    df = validate(eng.judge(items, [None] * len(items)), JUDGMENTS, "test")
    assert len(df) == 12 * 25 * 4 * 3
    assert (df["engine"] == "simulated").all() and (df["decoding"] == "simulated").all()
    assert df["simulated"].all() and (df["p_undecided"] == 0).all()
    np.testing.assert_allclose(df["p_pos"] + df["p_neg"] + df["p_invalid"], 1.0)
    # the letter in the response stands for the chosen pole under the ordering
    valid = df[df["choice"] != "invalid"]
    for o in benchmark.orderings:
        sub = valid[valid["ordering"] == o.id]
        letters = sub["response"].str[1]
        poles = letters.map(o.pole_of)
        assert (poles == sub["choice"]).all()
    inval = df[df["choice"] == "invalid"]
    assert not inval["response"].isin(["(a)", "(b)"]).any()


def test_deterministic_and_batch_independent(benchmark: Benchmark, strong: dict) -> None:
    eng = SimulatedJudgeEngine(strong, ENGINE, JUDGE, benchmark)
    items = _items(benchmark, 9)
    whole = eng.judge(items, [None] * 9)
    parts = pd.concat([eng.judge(items[:4], [None] * 4), eng.judge(items[4:], [None] * 5)])
    pd.testing.assert_frame_equal(whole.reset_index(drop=True), parts.reset_index(drop=True))
    other = SimulatedJudgeEngine({**strong, "seed": strong["seed"] + 1}, ENGINE, JUDGE, benchmark)
    assert not other.judge(items, [None] * 9)["choice"].equals(whole["choice"])


def test_scenario_subset_draws_same_responses(benchmark: Benchmark, strong: dict) -> None:
    items = _items(benchmark, 4)
    full = SimulatedJudgeEngine(strong, ENGINE, JUDGE, benchmark).judge(items, [None] * 4)
    sub = SimulatedJudgeEngine(strong, ENGINE, {**JUDGE, "scenarios": [23, 25]}, benchmark)
    part = sub.judge(items, [None] * 4)
    assert sorted(part["scenario_id"].unique()) == [23, 25]
    keep = full[full["scenario_id"].isin([23, 25])].reset_index(drop=True)
    pd.testing.assert_frame_equal(keep, part.reset_index(drop=True))
    with pytest.raises(StylisticBiasError, match="valid"):
        SimulatedJudgeEngine(strong, ENGINE, {**JUDGE, "scenarios": [99]}, benchmark)


def test_planted_truth_matches_engine_and_null_cells(
    tmp_path: Path, benchmark: Benchmark, strong: dict
) -> None:
    params = make_tables(tmp_path, 6)
    faces = pd.read_parquet(Path(params["paths"]["faces"]) / "faces.parquet")
    variations = pd.read_parquet(Path(params["paths"]["variations"]) / "variations.parquet")
    truth = planted_truth(benchmark, faces, variations, strong)
    ok = (faces["status"] == "ok").sum() + (variations["status"] == "ok").sum()
    assert len(truth) == ok * 25
    assert truth.loc[truth["is_base"], "delta_true"].isna().all()
    # exact phi from the engine's probabilities = phi_true
    eng = SimulatedJudgeEngine(strong, ENGINE, JUDGE, benchmark)
    img = truth.drop_duplicates("image_id")
    attrs = img[["age", "gender", "ethnicity", "body_type", "attribute", "value"]]
    recs = attrs.astype(object).where(attrs.notna(), None).to_dict("records")
    df = eng.judge_records(img["image_id"].tolist(), img["face_id"].tolist(), recs)
    g = df[df["seed"] == 1].groupby(["image_id", "scenario_id"])
    exact = (g["p_pos"].sum() / (g["p_pos"].sum() + g["p_neg"].sum())).rename("phi_exact")
    m = truth.merge(exact.reset_index(), on=["image_id", "scenario_id"])
    np.testing.assert_allclose(m["phi_true"], m["phi_exact"], atol=1e-12)
    # planted null cells (piercings, accessories, freckles...) have exactly zero planted delta
    null = truth[truth["category"].isin(["Piercings", "Accessories"])]
    assert len(null) and np.allclose(null["delta_planted"], 0.0, atol=1e-12)
    worn = truth[truth["value"] == "Worn / Distressed clothing"]
    if len(worn):
        assert (worn["delta_planted"] < 0).all()


def test_drawn_share_recovers_truth(benchmark: Benchmark) -> None:
    """With many seeds, the share of positive valid answers converges to phi_true."""
    cfg = {"name": "sim", "effect_scale": 1.0, "noise_sd": 0.3, "invalid_rate": 0.1, "seed": 5}
    eng = SimulatedJudgeEngine(cfg, ENGINE, {**JUDGE, "seeds": list(range(1, 401))}, benchmark)
    items = _items(benchmark, 3)
    df = eng.judge(items, [None] * 3)
    valid = df[df["choice"] != "invalid"]
    share = (
        (valid["choice"] == "positive").groupby([valid["image_id"], valid["scenario_id"]]).mean()
    )
    g = df[df["seed"] == 1].groupby(["image_id", "scenario_id"])
    exact = g["p_pos"].sum() / (g["p_pos"].sum() + g["p_neg"].sum())
    assert np.abs(share - exact).max() < 0.06
    assert abs((df["choice"] == "invalid").mean() - 0.1) < 0.01


def test_paper_scale_batch(benchmark: Benchmark, strong: dict) -> None:
    """2,000 images x 300 prompts in one call, every record there. How fast (target: well
    under 10 s; the paper's 16,226 images in ~10 s) is a benchmark, not a bound a loaded
    machine could break: ``python -m stylisticbias_dev.bench.simulated_judge``
    (``reports/bench/simulated_judge.json``)."""
    eng = SimulatedJudgeEngine(strong, ENGINE, JUDGE, benchmark)
    items = _items(benchmark, 2000)
    df = eng.judge(items, [None] * len(items))
    assert len(df) == 2000 * 300
    assert df.groupby("image_id").size().eq(300).all() and df["image_id"].nunique() == 2000


def test_bad_planted_file_names_key(benchmark: Benchmark) -> None:
    with pytest.raises(StylisticBiasError, match="unknown scenario category 'Moral'"):
        load_planted({"variations": {"Eyewear": {"Sunglasses": {"Moral": 1.0}}}}, benchmark)
    with pytest.raises(StylisticBiasError, match=r"valid: .*Sunglasses"):
        load_planted({"variations": {"Eyewear": {"Monocle": {"default": 1.0}}}}, benchmark)
    with pytest.raises(StylisticBiasError, match="unknown age group"):
        load_planted({"demographics": {"age": {"teen": {"default": 1}}}}, benchmark)
    with pytest.raises(StylisticBiasError, match="unknown key"):
        load_planted({"baselines": {}}, benchmark)


def test_default_planted_shape(benchmark: Benchmark) -> None:
    """The shipped planted file resembles the paper's headline shape."""
    pe = load_planted("conf/planted/default.yaml", benchmark)
    row = {k: pe.variations[i] * pe.sensitivity for k, i in pe.value_index.items()}
    mean = {k: float(v.mean()) for k, v in row.items()}
    assert mean[("Fashion style", "Worn / Distressed clothing")] < -0.5
    assert mean[("Facial hair", "Full beard")] > 0.2
    assert mean[("Piercings", "Multiple")] == 0.0 and mean[("Accessories", "Cap")] == 0.0
    cats = [s.category for s in benchmark.scenarios]
    socio = [i for i, c in enumerate(cats) if c == "Socioeconomic & Appearance"]
    other = [i for i, c in enumerate(cats) if c != "Socioeconomic & Appearance"]
    assert pe.sensitivity[socio].mean() > 2 * pe.sensitivity[other].mean()
    # the demo's simulated judges name no file (planted: null): each protocol's judge reads the
    # protocol's own conf/planted/<protocol>.yaml if there is one, else the default file
    view = load_params()
    for model in view["models"].values():
        assert planted_source(model, model["engine"]) is None
    own = {p: f"conf/planted/{p}.yaml" for p in judged(view)}
    want = {p: f if (project_root() / f).is_file() else DEFAULT_PLANTED for p, f in own.items()}
    assert {p: protocol_planted(p) for p in want} == want
    assert want["stylisticbias"] == DEFAULT_PLANTED == "conf/planted/default.yaml"
    assert want["beauty-and-the-bias"] == "conf/planted/beauty-and-the-bias.yaml"
    # what load_planted(None, ...) resolves to, for the protocols whose judge reads these files
    # (the tasks family's, REFLECT and VIGNETTE, read conf/planted/tasks.yaml: its own plants)
    for protocol in ("stylisticbias", "beauty-and-the-bias"):
        assert load_planted(None, load_benchmark(protocol)).source == want[protocol], protocol
    resolved = load_planted(None, benchmark)  # this protocol's: the file checked above
    assert np.array_equal(resolved.variations, pe.variations)
    assert np.array_equal(resolved.sensitivity, pe.sensitivity)
