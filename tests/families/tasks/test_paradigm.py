"""``paradigm:``, a checked field of a task protocol: which tables its tasks make (REFLECT vs
VIGNETTE), declared in a module each (stylisticbias.families.tasks), never read off the
tasks' fields or display text."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from stylisticbias.benchmark import benchmark_from_config, load_benchmark
from stylisticbias.errors import StylisticBiasError
from stylisticbias.family import FAMILIES, family_of

ROOT = Path(__file__).resolve().parents[3]


def _raw(name: str) -> dict:
    return yaml.safe_load((ROOT / "conf" / "benchmark" / f"{name}.yaml").read_text("utf-8"))


@pytest.mark.parametrize("name", ["reflect", "vignette"])
def test_a_shipped_task_protocol_declares_its_paradigm(name: str) -> None:
    assert _raw(name)["paradigm"] == name
    bench = load_benchmark(name)
    assert bench.paradigm == name
    assert family_of(bench).paradigm(name).name == name


def test_the_tasks_family_declares_its_paradigms_once() -> None:
    family = FAMILIES.lookup("tasks")
    assert tuple(family.paradigms) == ("reflect", "vignette")
    reflect, vignette = (family.paradigm(n) for n in family.paradigms)
    want = ("reflect_win_rates", "reflect_win_matrix", "task_position_bias")
    assert reflect.pairwise_tables == want
    assert not reflect.selection_tables and reflect.image_twin is None
    assert vignette.pairwise_tables == ("task_position_bias",)
    assert vignette.selection_tables and vignette.image_twin is not None


@pytest.mark.parametrize("bad", ["vignettex", "", 3, ["reflect"]])
def test_an_unknown_paradigm_fails_in_one_line_naming_the_valid_ones(bad: object) -> None:
    with pytest.raises(StylisticBiasError) as exc:
        benchmark_from_config({**_raw("reflect"), "paradigm": bad}, "conf/benchmark/x.yaml")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("conf/benchmark/x.yaml: paradigm: unknown")
    assert msg.endswith("valid: reflect, vignette")


def test_a_family_without_paradigms_takes_none() -> None:
    cfg = {**_raw("stylisticbias"), "paradigm": "reflect"}
    with pytest.raises(StylisticBiasError, match=r"paradigm: unknown .* valid: none$"):
        benchmark_from_config(cfg, "x.yaml")
    assert load_benchmark("stylisticbias").paradigm == ""


def test_a_task_file_without_paradigm_takes_the_first_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cfg = {k: v for k, v in _raw("vignette").items() if k != "paradigm"}
    with caplog.at_level(logging.WARNING):
        bench = benchmark_from_config(cfg, "old.yaml")
    assert bench.paradigm == "reflect"
    assert "old.yaml: no `paradigm:`; using reflect" in caplog.text


def test_a_text_only_task_finds_its_image_twin_by_the_paradigms_rule() -> None:
    bench = load_benchmark("vignette")
    twin = family_of(bench).paradigm("vignette").image_twin
    pairs = {t.id: twin(t, bench) for t in bench.tasks if t.task == "text_only"}
    # every text-only question (4000 + 10 a + k) mirrors its decision question (3000 + ...)
    assert len(pairs) == 74 * 9 and {k: v.id for k, v in pairs.items() if v} == {
        k: k - 1000 for k in pairs
    }
    # a pairwise task has no twin
    assert twin(bench.task_scenario(3021), bench) is None


def test_a_sixth_protocol_with_a_new_paradigm(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/architecture.md's worked example: VIGNETTE's decision questions as a protocol of
    its own whose paradigm also keeps REFLECT's win-rate tables -- a protocol mapping, one
    paradigm (registered here as ``FAMILY.paradigms`` would name its module)."""
    import pandas as pd

    from stylisticbias.families.tasks.analysis.records import task_tables_from_records
    from stylisticbias.families.tasks.judge.run import task_records
    from stylisticbias.families.tasks.paradigm import Paradigm
    from stylisticbias.families.tasks.vignette import image_twin

    hiring = Paradigm(
        name="hiring",
        pairwise_tables=("reflect_win_rates", "reflect_win_matrix", "task_position_bias"),
        image_twin=image_twin,
    )
    family = FAMILIES.lookup("tasks")
    monkeypatch.setitem(family._paradigms, "hiring", hiring)  # type: ignore[attr-defined]
    raw = _raw("vignette")
    cfg = {
        **raw,
        "name": "vignette-hiring",
        "paradigm": "hiring",
        "tasks": [t for t in raw["tasks"] if t["id"] in (3021, 3022, 4021, 4022)],
    }
    bench = benchmark_from_config(cfg, "conf/benchmark/vignette-hiring.yaml")
    assert bench.paradigm == "hiring"
    eth = ["Asian", "Black", "White"]
    faces = pd.DataFrame(
        {
            "face_id": [f"F{i:03d}" for i in range(24)],
            "image_id": [f"F{i:03d}-base" for i in range(24)],
            "ethnicity": [eth[i % 3] for i in range(24)],
            "gender": ["female" if (i // 3) % 2 == 0 else "male" for i in range(24)],
            "status": ["ok"] * 24,
        }
    )
    rec = task_records(bench, faces, "sim", seed=1)
    tabs = task_tables_from_records(rec, bench, "sim", n_boot=5, simulated=True)
    assert {
        "reflect_win_rates",
        "reflect_win_matrix",
        "task_position_bias",
        "vignette_text_vs_image",
    } == set(tabs)
    assert sorted(tabs["vignette_text_vs_image"]["scenario_id"].unique()) == [3021, 3022]
