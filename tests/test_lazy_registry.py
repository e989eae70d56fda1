"""The one registry class (stylisticbias.registry): lazy references, one lookup, one error line,
and every name-keyed registry of the library built on it."""

from __future__ import annotations

import importlib
import sys

import pytest

from stylisticbias.errors import StylisticBiasError
from stylisticbias.registry import REFERENCE, Registry, UnknownName, resolve


def test_a_reference_is_imported_on_first_use_and_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "stylisticbias.sampling", raising=False)
    reg: Registry[object] = Registry("thing", {"seed": "stylisticbias.sampling:face_seed"})
    assert "stylisticbias.sampling" not in sys.modules  # naming it imports nothing
    assert reg.names == ("seed",) and "seed" in reg and len(reg) == 1
    assert reg.reference("seed") == "stylisticbias.sampling:face_seed"
    first = reg["seed"]
    assert first is importlib.import_module("stylisticbias.sampling").face_seed
    assert reg.lookup("seed") is first


def test_objects_register_as_themselves() -> None:
    reg: Registry[int] = Registry("number", {"one": 1, "two": 2})
    assert dict(reg) == {"one": 1, "two": 2}
    assert reg.reference("one") is None
    reg["three"] = 3
    del reg["one"]
    assert list(reg) == ["two", "three"] and reg.get("one") is None


@pytest.mark.parametrize("name", ["nope", "", None, 3])
def test_an_unknown_name_is_one_line_naming_the_valid(name: object) -> None:
    reg: Registry[int] = Registry("engine", {"hf": 1, "openai": 2, "simulated": 3})
    with pytest.raises(StylisticBiasError) as exc:
        reg.lookup(name, "models.x.engine.name")
    assert str(exc.value) == (
        f"models.x.engine.name: unknown engine {name!r}; valid: hf, openai, simulated"
    )
    with pytest.raises(KeyError) as key_exc:  # a mapping: KeyError, as a dict
        reg[name]  # type: ignore[index]
    assert str(key_exc.value) == f"unknown engine {name!r}; valid: hf, openai, simulated"
    assert isinstance(key_exc.value, UnknownName)


def test_a_bad_reference_is_one_line() -> None:
    with pytest.raises(StylisticBiasError, match=r"expected 'stylisticbias.<module>:<attribute>'"):
        resolve("os:path")
    assert REFERENCE.match("stylisticbias.families.tasks:FAMILY")
    assert not REFERENCE.match("stylisticbias.families.tasks.FAMILY")


REGISTRIES = [
    ("stylisticbias.spec.engines", "ENGINE_SPECS", "engine"),
    ("stylisticbias.spec.generators", "GENERATOR_SPECS", "generator"),
    ("stylisticbias.spec.models", "MODEL_SPECS", "model engine"),
    ("stylisticbias.spec.annotate", "ANNOTATOR_SPECS", "annotator engine"),
    ("stylisticbias.judge.protocol.tasks.registry", "TASK_TYPES", "task type"),
    ("stylisticbias.judge.protocol.tasks.registry", "SCENARIO_TASKS", "task type"),
    ("stylisticbias.families.tasks.judge.plants", "PLANTS", "planted task type"),
    ("stylisticbias.analysis.table_registry", "REGISTRY", "analysis table"),
    ("stylisticbias.families.tasks.analysis.tables", "TASK_REGISTRY", "task table"),
    ("stylisticbias.soda.tables", "SODA_TABLES", "SODA table"),
    ("stylisticbias.families.tasks.report.figures", "TASK_FIGURES", "task figure"),
]


@pytest.mark.parametrize(("module", "attr", "what"), REGISTRIES, ids=lambda x: str(x))
def test_the_name_keyed_registries_are_registries(module: str, attr: str, what: str) -> None:
    reg = getattr(importlib.import_module(module), attr)
    assert isinstance(reg, Registry) and reg.what == what and len(reg) > 0
    for name in reg:
        assert reg[name] is not None
    with pytest.raises(StylisticBiasError, match=rf"^unknown {what} 'no-such'; valid: "):
        reg.lookup("no-such")
