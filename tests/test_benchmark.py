"""The benchmark definition in conf/ matches the paper (Tables 1, 9, 10, 12; App. C.2)."""

from __future__ import annotations

import copy

import pytest

from stylisticbias.benchmark import Benchmark, benchmark_from_config
from stylisticbias.errors import StylisticBiasError

PAPER_MALE, PAPER_FEMALE = 274, 226


def test_counts_of_the_grid(benchmark: Benchmark) -> None:
    assert len(benchmark.variations) == 55
    assert sum(v.evaluated for v in benchmark.variations) == 34
    assert len(benchmark.attributes) == 12
    assert len(benchmark.scenarios) == 25
    male, female = benchmark.variations_for("male"), benchmark.variations_for("female")
    assert (len(male), len(female)) == (48, 51)
    em = benchmark.variations_for("male", evaluated_only=True)
    ef = benchmark.variations_for("female", evaluated_only=True)
    assert (len(em), len(ef)) == (31, 32)


def test_paper_dataset_size_from_configuration(benchmark: Benchmark) -> None:
    full = PAPER_MALE * len(benchmark.variations_for("male")) + PAPER_FEMALE * len(
        benchmark.variations_for("female")
    )
    evaluated = PAPER_MALE * len(benchmark.variations_for("male", evaluated_only=True)) + (
        PAPER_FEMALE * len(benchmark.variations_for("female", evaluated_only=True))
    )
    assert full == 24_678
    assert evaluated == 15_726
    # 300 prompts per evaluated image (base faces included): ~4.72M calls per model
    calls = (evaluated + PAPER_MALE + PAPER_FEMALE) * len(benchmark.scenarios) * 4 * 3
    assert calls == 4_867_800


def test_whitelist_is_table12(benchmark: Benchmark) -> None:
    import csv

    from stylisticbias.config import project_root

    ref = project_root() / "conf" / "reference" / "paper" / "variations.csv"
    rows = list(csv.DictReader(ref.open()))
    want = {(r["category"], r["value"]) for r in rows if r["evaluated"] == "true"}
    have = {(v.attribute, v.value) for v in benchmark.variations if v.evaluated}
    assert have == want
    labels = {
        (r["category"], r["value"]): r["table12_variation"]
        for r in rows
        if r["evaluated"] == "true"
    }
    assert {(v.attribute, v.value): v.label for v in benchmark.variations if v.evaluated} == labels
    assert {(v.attribute, v.value) for v in benchmark.variations} == {
        (r["category"], r["value"]) for r in rows
    }


def test_scenarios_are_table1(benchmark: Benchmark) -> None:
    import csv

    from stylisticbias.config import project_root

    rows = list(csv.DictReader((project_root() / "conf/reference/paper/scenarios.csv").open()))
    want = [(int(r["scenario_id"]), r["category"], r["positive"], r["negative"]) for r in rows]
    assert [(s.id, s.category, s.positive, s.negative) for s in benchmark.scenarios] == want


def test_orderings_follow_appendix_c2(benchmark: Benchmark) -> None:
    s = benchmark.scenario(1)
    texts = {o.id: benchmark.forced_choice_prompt(s, o) for o in benchmark.orderings}
    assert "(a) Competent or (b) Incompetent?" in texts[1]
    assert "(b) Incompetent or (a) Competent?" in texts[2]
    assert "(a) Incompetent or (b) Competent?" in texts[3]
    assert "(b) Competent or (a) Incompetent?" in texts[4]
    assert texts[1].startswith("Based only on visible appearance. There is no correct")
    assert texts[1].endswith("Answer with only (a) or (b). No other text.")
    # letter and position are balanced: each ordering puts the positive pole elsewhere
    combos = {(o.positive_letter, o.positive_position) for o in benchmark.orderings}
    assert combos == {("a", 1), ("a", 2), ("b", 1), ("b", 2)}
    assert [o.pole_of("a") for o in benchmark.orderings] == [
        "positive",
        "positive",
        "negative",
        "negative",
    ]


def test_prompts_are_the_papers(benchmark: Benchmark) -> None:
    base = benchmark.base_face_prompt(
        age="elderly", gender="female", ethnicity="Latino", body_type="obese"
    )
    assert base.startswith(
        "Photorealistic studio portrait of an average-looking obese build elderly female"
    )
    assert "person with Latino facial features." in base
    beard = benchmark.variation("Facial hair", "Full beard")
    assert benchmark.variation_prompt(beard, gender="male").endswith(
        "facial_hair_male: full beard. Keep the face identity consistent with the reference image."
    )
    fashion = benchmark.variation("Fashion style", "Streetwear")
    assert "Wearing streetwear clothing/outfit." in benchmark.variation_prompt(
        fashion, gender="male"
    )
    assert fashion.framing == "full_body"


def test_unknown_value_lists_valid(benchmark: Benchmark) -> None:
    with pytest.raises(StylisticBiasError, match="valid: Freckles, Acne, Scars, Moles"):
        benchmark.variation("Skin irreg.", "Warts")
    with pytest.raises(StylisticBiasError, match="unknown attribute"):
        benchmark.variation("Shoes", "Boots")
    with pytest.raises(StylisticBiasError, match="unknown scenario_id 26"):
        benchmark.scenario(26)


def test_bad_definition_is_rejected(default_params) -> None:
    cfg = copy.deepcopy(default_params["benchmark"])
    cfg["attributes"][0]["gender_scope"] = "men"
    with pytest.raises(StylisticBiasError, match="gender_scope"):
        benchmark_from_config(cfg)
    cfg = copy.deepcopy(default_params["benchmark"])
    cfg["orderings"][0]["slots"] = [["a", "positive"], ["a", "negative"]]
    with pytest.raises(StylisticBiasError, match="orderings"):
        benchmark_from_config(cfg)
    cfg = copy.deepcopy(default_params["benchmark"])
    cfg["scenarios"][1]["id"] = 1
    with pytest.raises(StylisticBiasError, match="duplicate scenario"):
        benchmark_from_config(cfg)
