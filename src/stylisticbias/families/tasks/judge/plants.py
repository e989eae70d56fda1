"""The simulated judge's planted effects for task protocols (``conf/planted/tasks.yaml``).

The stage judges the protocol's procedural faces, whose group is ``<ethnicity>-<gender>``
(lower case, e.g. ``black-female``). One :class:`~.tasks.TaskPlant` per task type; a pairwise
question whose ``fields`` give ``valence: low`` (VIGNETTE's negative trait terms) gets the
shifts negated, so a group favoured for "friendly" is disfavoured for "unfriendly". The
text-only ablation (``task: text_only``) has no planted preference (the description names no
group): only its position bias and invalid rate.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from stylisticbias.benchmark import TaskScenario
from stylisticbias.config import ROOT, load_yaml_file
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.simulated.tasks import TaskPlant
from stylisticbias.registry import Registry

#: the file of the task protocols' planted effects
PLANTED_FILE = ROOT / "conf" / "planted" / "tasks.yaml"
_KEYS = tuple(f.name for f in fields(TaskPlant))


def task_plant(entry: Mapping[str, Any], where: str, *, null: bool = False) -> TaskPlant:
    """One plant of the file (``null``: its shifts and position bias set to 0); an unknown key
    fails in one line naming the valid ones."""
    bad = sorted(set(entry) - set(_KEYS))
    if bad:
        raise StylisticBiasError(
            f"{where}: unknown key(s) {', '.join(bad)}; valid: {', '.join(_KEYS)}"
        )
    kw = dict(entry)
    kw["shift"] = {} if null else {str(g): float(v) for g, v in (kw.get("shift") or {}).items()}
    kw["base"] = tuple(float(b) for b in kw.get("base") or ())
    if null:
        kw["position_bias"] = 0.0
    return TaskPlant(**kw)


@functools.cache
def _file() -> dict[str, Any]:
    return dict(load_yaml_file(PLANTED_FILE) or {})


def load_plants(section: str, *, null: bool = False) -> dict[str, TaskPlant]:
    """The plants of one section of ``conf/planted/tasks.yaml`` (``judge``, ``reflect``,
    ``vignette``), by name."""
    data = _file()
    if section not in data:
        raise StylisticBiasError(
            f"{PLANTED_FILE.name}: no section {section!r}; valid: {', '.join(data)}"
        )
    where = f"{PLANTED_FILE.name}: {section}"
    return {
        str(k): task_plant(v or {}, f"{where}.{k}", null=null) for k, v in data[section].items()
    }


#: task type -> the planted effects over face groups (the file's ``judge`` section)
PLANTS: Registry[TaskPlant] = Registry("planted task type", load_plants("judge"))


def face_group(ethnicity: str, gender: str) -> str:
    """The group key of a face (``<ethnicity>-<gender>``, lower case)."""
    return f"{ethnicity.lower().replace(' ', '_')}-{gender.lower()}"


def plant_for(scenario: TaskScenario) -> TaskPlant:
    """The planted effects of one ``tasks:`` entry (see the module doc)."""
    plant = PLANTS.lookup(scenario.task, f"task {scenario.id}")
    if scenario.task == "choice_k" and len(plant.base) != len(scenario.options):
        plant = TaskPlant(shift=plant.shift, invalid_rate=plant.invalid_rate)
    if dict(scenario.fields).get("valence") == "low":
        plant = TaskPlant(
            shift={g: -s for g, s in plant.shift.items()},
            base=plant.base,
            base_mean=plant.base_mean,
            noise_sd=plant.noise_sd,
            position_bias=plant.position_bias,
            invalid_rate=plant.invalid_rate,
        )
    return plant
