"""pairwise: two identities per prompt, both orders, swap-consistency, the image count."""

from __future__ import annotations

from pathlib import Path

import pytest

from stylisticbias.benchmark import load_benchmark
from stylisticbias.judge.protocol.tasks.composites import LAYOUT, CompositeLayout
from stylisticbias.judge.protocol.tasks.pairwise import (
    composite,
    image_count_reason,
    slot_images,
    swap_check,
)
from stylisticbias.judge.protocol.tasks.registry import Answer, task_of

TASKS = Path(__file__).resolve().parents[3] / "data" / "protocols" / "tasks.yaml"


@pytest.fixture(scope="module")
def pair():
    bench = load_benchmark(TASKS)
    sc = bench.task_scenario(102)
    task = task_of(sc)
    return bench, sc, task, task.prompts(sc, bench)


def test_both_orders_map_labels_to_identities(pair) -> None:
    bench, sc, task, (p0, p1) = pair
    assert task.parse("A", sc, p0, bench).choice == "first"
    assert task.parse("A", sc, p1, bench).choice == "second"  # swapped: slot A shows second
    assert task.parse("(b)", sc, p0, bench).choice == "second"
    assert task.parse("B", sc, p1, bench).choice == "first"
    d = task.distribution({"a": 0.6, "b": 0.3, "invalid": 0.1}, sc, p1, bench)
    assert d == {"first": 0.3, "second": 0.6, "invalid": 0.1}


def test_swap_consistency_and_win_rate(pair) -> None:
    bench, sc, task, (p0, p1) = pair
    texts = [("A", "B"), ("A", "A"), ("B", "A"), ("A", "neither"), ("B", "A")]
    answers = [
        a
        for t0, t1 in texts
        for a in (task.parse(t0, sc, p0, bench), task.parse(t1, sc, p1, bench))
    ]
    checks = [swap_check(answers[i], answers[i + 1]) for i in range(0, len(answers), 2)]
    # (B, A): order 0's B and order 1's A both show "second" -> consistent
    assert checks == ["consistent", "inconsistent", "consistent", "invalid", "consistent"]
    s = task.scores(answers, sc)
    assert s["n_pairs"] == 5 and s["n_valid_pairs"] == 4
    assert s["inconsistent_rate"] == 0.25 and s["win_rate_first"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="pairs"):
        task.scores(answers[:3], sc)


def test_one_image_for_a_pairwise_prompt_is_invalid_with_reason(pair) -> None:
    _, _, _, (p0, _) = pair
    assert image_count_reason(p0, 2) is None
    assert image_count_reason(p0, 1) == "task prompt (102, 0) needs 2 image(s), got 1"
    bad = Answer.invalid(image_count_reason(p0, 1))
    assert bad.outcome == "invalid"


def test_composite_is_one_image_with_left_identity_recorded() -> None:
    bench = load_benchmark(TASKS)
    sc = bench.task_scenario(103)
    p0, p1 = task_of(sc).prompts(sc, bench)
    assert (p0.images, p0.slots[0], p1.slots[0]) == (1, "first", "second")


def _solid(colour: str, size=(20, 30)):
    from PIL import Image

    return Image.new("RGB", size, colour)


def test_slot_images_follow_the_order_and_composite_records_left() -> None:
    bench = load_benchmark(TASKS)
    sc = bench.task_scenario(102)
    red, blue = _solid("red"), _solid("blue")
    p0, p1 = task_of(sc).prompts(sc, bench)
    assert slot_images(p0, red, blue) == [red, blue]
    assert slot_images(p1, red, blue) == [blue, red]
    comp = bench.task_scenario(103)
    c0, c1 = task_of(comp).prompts(comp, bench)
    (img0,) = slot_images(c0, red, blue)
    (img1,) = slot_images(c1, red, _solid("blue", (40, 60)))  # fitted to the cell, aspect kept
    assert img0.size == img1.size == LAYOUT.size  # one fixed canvas
    right_x = LAYOUT.cell + LAYOUT.gap
    mid = LAYOUT.cell // 2
    assert img0.getpixel((mid, mid)) == (255, 0, 0) and img0.getpixel((right_x + mid, mid)) == (
        0,
        0,
        255,
    )
    assert img0.getpixel((LAYOUT.cell + LAYOUT.gap // 2, mid)) == (255, 255, 255)  # the gap
    # order 1 swaps: the second identity (blue) is on the left, and the prompt records it
    assert img1.getpixel((mid, mid)) == (0, 0, 255) and c1.slots[0] == "second"
    assert composite(red, blue, CompositeLayout(cell=30, gap=0)).size == (60, 30)
