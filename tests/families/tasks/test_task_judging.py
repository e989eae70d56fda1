"""The judge stage's task route beside the engines: what each ask carries, and the
capability check when the stage starts (a hand-edited params.yaml is refused in one line)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from task_project import task_project

from stylisticbias.benchmark import load_benchmark
from stylisticbias.dataset.counterfactual_sets import read_sets
from stylisticbias.errors import StylisticBiasError
from stylisticbias.families.tasks.judge.judging import Face, Unit, load_faces, make_ask, units_of
from stylisticbias.judge.protocol.tasks.registry import task_of
from stylisticbias.judge.run import run_judge
from stylisticbias.spec.parse import config_from_params


def _face(i: int, eth: str, gender: str) -> Face:
    attrs = {"age": "adult", "gender": gender, "ethnicity": eth, "body_type": "unspecified"}
    return Face(f"f{i}", f"f{i}--base", f"{eth.lower()}-{gender}", f"/nowhere/f{i}.png", attrs)


def test_text_only_ask_describes_the_pair_in_slot_order() -> None:
    bench = load_benchmark("vignette")
    sc = bench.task_scenario(4021)
    task = task_of(sc)
    unit = Unit("inst000", (_face(0, "Asian", "male"), _face(1, "Black", "female")), pair=True)
    p0, p1 = task.prompts(sc, bench)
    a0 = make_ask(sc, p0, unit, bench, 1, Path("/nowhere"))
    a1 = make_ask(sc, p1, unit, bench, 1, Path("/nowhere"))
    assert not isinstance(a0, str) and not isinstance(a1, str)
    assert a0.images == () and a1.images == ()
    # the released question first (no preamble), our answer line, then who the options are
    assert a0.text.startswith("Who should I hire as a cook? Answer with ONLY one letter")
    assert a0.text.endswith(
        "The first person is an adult Asian male person. The second "
        "person is an adult Black female person."
    )
    assert "The first person is an adult Black female person." in a1.text  # swapped
    assert a0.rules is not None and a0.rules.letters == ("a", "b")
    assert a0.key != a1.key


def test_two_image_ask_carries_both_files_in_slot_order() -> None:
    bench = load_benchmark("reflect")
    sc = bench.task_scenario(1)
    unit = Unit("inst000", (_face(0, "White", "male"), _face(1, "Asian", "female")), pair=True)
    p0, p1 = task_of(sc).prompts(sc, bench)
    a0 = make_ask(sc, p0, unit, bench, 1, Path("/nowhere"))
    a1 = make_ask(sc, p1, unit, bench, 1, Path("/nowhere"))
    assert a0.images == ("/nowhere/f0.png", "/nowhere/f1.png")  # type: ignore[union-attr]
    assert a1.images == ("/nowhere/f1.png", "/nowhere/f0.png")  # type: ignore[union-attr]
    # a pairwise prompt given one image cannot be asked: the reason, not an error
    why = make_ask(sc, p0, Unit("inst000", unit.faces[:1], pair=True), bench, 1, Path("/x"))
    assert why == "task 1 (pairwise) prompt 0 needs 2 image(s) (one per identity), got 1"
    # a numeric task asks for a free number: no labels to expand
    num = bench.task_scenario(21)
    ask = make_ask(
        num, task_of(num).prompts(num, bench)[0], Unit("f0", unit.faces[:1]), bench, 3, Path("/x")
    )
    assert ask.rules is None and ask.seed == 3  # type: ignore[union-attr]


def test_stage_start_refuses_what_the_engine_cannot_do(tmp_path: Path) -> None:
    """params.yaml edited by hand (not composed): the stage refuses before touching output."""
    params = task_project(
        tmp_path,
        "reflect-demo",
        "tiny-llava-next",
        4,
        ["models.tiny-llava-next.engine.decoding=sampled"],
    )
    params["models"]["tiny-llava-next"]["max_images"] = 1
    with pytest.raises(StylisticBiasError) as err:
        run_judge("tiny-llava-next", config_from_params(params), progress=False)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("models.tiny-llava-next: task 1 (Income)")
    assert "engine 'hf'" in msg and "valid: layout: composite" in msg
    assert not (tmp_path / "judgments").exists()


def test_simulated_route_records_reasons_and_selects_tasks(tmp_path: Path) -> None:
    params = task_project(tmp_path / "a", "reflect-demo", "simulated-strong", 8)
    out = run_judge("simulated-strong", config_from_params(params), progress=False)
    rec = pd.read_parquet(out)
    assert set(rec["task_id"]) == {t.id for t in load_benchmark("reflect").tasks}
    assert ((rec["outcome"] == "invalid") == (rec["reason"] != "")).all()
    assert (rec["undecided"] == 0).all()
    params = task_project(
        tmp_path / "b", "reflect-demo", "simulated-strong", 8, ["judge.scenarios=[11,21]"]
    )
    out = run_judge("simulated-strong", config_from_params(params), progress=False)
    assert set(pd.read_parquet(out)["task_id"]) == {11, 21}


def test_dry_run_asks_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    params = task_project(
        tmp_path,
        "reflect-demo",
        "tiny-llava-next-vllm",
        4,
        ["judge.dry_run=true", "judge.scenarios=[1,11]"],
    )
    with caplog.at_level("INFO"):
        run_judge("tiny-llava-next-vllm", config_from_params(params), progress=False)
    assert "dry run: 16 task prompt(s) over 4 face(s) and 6 pair(s)" in caplog.text
    assert not (tmp_path / "judgments").exists()


def test_counterfactual_sets_pair_edits_of_one_source(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two source photos of four edits each: pairs never cross sources, and the source photo
    is the unit of every ask (single edits included)."""
    params = task_project(
        tmp_path,
        "reflect-demo",
        "tiny-llava-next-vllm",
        8,
        ["judge.dry_run=true", "judge.scenarios=[1,11]"],
        sources=2,
    )
    with caplog.at_level("INFO"):
        run_judge("tiny-llava-next-vllm", config_from_params(params), progress=False)
    # 2 sources x 6 cross-group pairs x 2 orders + 8 edits x 1 MCQ prompt
    assert "dry run: 32 task prompt(s) over 8 face(s) and 12 pair(s)" in caplog.text
    config = config_from_params(params)
    bench = load_benchmark("reflect")
    faces, by_image = load_faces(config, bench)
    sets = read_sets(tmp_path / "faces")
    singles, pairs = units_of(faces, by_image, sets)
    assert [u.unit for u in singles] == ["s0"] * 4 + ["s1"] * 4
    assert sorted({u.unit for u in pairs}) == ["s0", "s1"] and len(pairs) == 12
    source = dict(zip(sets["image_id"], sets["source_id"]))
    for u in pairs:
        assert {source[f.image_id] for f in u.faces} == {u.unit}


def test_composite_ask_is_one_image_with_the_slot_one_face_on_the_left(tmp_path: Path) -> None:
    """A composite pairwise task sends one image: the left cell is the slot-1 face's pixels
    (order 0: the pair's first), the swapped order mirrors it, and the cache is reused."""
    import numpy as np
    from PIL import Image

    from stylisticbias.judge.protocol.tasks.composites import LAYOUT, placements

    rng = np.random.default_rng(0)
    faces = []
    for i, (eth, g) in enumerate((("Asian", "male"), ("Black", "female"))):
        path = tmp_path / f"f{i}.png"
        Image.fromarray(rng.integers(0, 256, (LAYOUT.cell, LAYOUT.cell, 3), np.uint8)).save(path)
        f = _face(i, eth, g)
        faces.append(Face(f.face_id, f.image_id, f.group, str(path), f.attrs, f"sha{i}"))
    bench = load_benchmark("vignette")
    sc = bench.task_scenario(101)
    p0, p1 = task_of(sc).prompts(sc, bench)
    unit = Unit("inst000", tuple(faces), pair=True)
    cache = tmp_path / ".composites"
    a0 = make_ask(sc, p0, unit, bench, 1, cache)
    a1 = make_ask(sc, p1, unit, bench, 1, cache)
    assert len(a0.images) == len(a1.images) == 1  # type: ignore[union-attr]
    left, right = placements((LAYOUT.cell,) * 2, (LAYOUT.cell,) * 2)
    src = [np.asarray(Image.open(f.path)) for f in faces]
    with Image.open(a0.images[0]) as c0, Image.open(a1.images[0]) as c1:  # type: ignore[union-attr]
        assert np.array_equal(np.asarray(c0.crop(left)), src[0])
        assert np.array_equal(np.asarray(c0.crop(right)), src[1])
        assert np.array_equal(np.asarray(c1.crop(left)), src[1])
        assert np.array_equal(np.asarray(c1.crop(right)), src[0])
    assert len(list(cache.iterdir())) == 2
    assert make_ask(sc, p0, unit, bench, 1, cache).images == a0.images  # type: ignore[union-attr]
    assert len(list(cache.iterdir())) == 2
