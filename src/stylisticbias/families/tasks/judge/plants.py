"""The simulated judge's planted effects for task protocols judged by the judge stage.

The stage judges the protocol's procedural faces, whose group is ``<ethnicity>-<gender>``
(lower case, e.g. ``black-female``). One :class:`~.tasks.TaskPlant` per task type; a pairwise
question whose ``fields`` give ``valence: low`` (VIGNETTE's negative trait terms) gets the
shifts negated, so a group favoured for "friendly" is disfavoured for "unfriendly". The
text-only ablation (``task: text_only``) has no planted preference (the description names no
group): only its position bias and invalid rate.
"""

from __future__ import annotations

from stylisticbias.benchmark import TaskScenario
from stylisticbias.judge.engines.simulated.tasks import TaskPlant
from stylisticbias.registry import Registry

#: task type -> the planted effects over face groups
PLANTS: Registry[TaskPlant] = Registry("planted task type", {
    "pairwise": TaskPlant(shift={"black-female": -0.5, "black-male": -0.3, "white-male": 0.4},
                          position_bias=0.3, invalid_rate=0.03),
    "choice_k": TaskPlant(shift={"black-male": -0.6, "white-male": 0.3},
                          base=(0.1, 0.2, 0.3, 0.2, 0.1, 0.1), invalid_rate=0.03),
    "numeric": TaskPlant(shift={"black-female": -0.08, "white-male": 0.05}, base_mean=70_000,
                         noise_sd=0.15, invalid_rate=0.03),
    "text_only": TaskPlant(position_bias=0.3, invalid_rate=0.03),
})  # fmt: skip


def face_group(ethnicity: str, gender: str) -> str:
    """The group key of a face (``<ethnicity>-<gender>``, lower case)."""
    return f"{ethnicity.lower().replace(' ', '_')}-{gender.lower()}"


def plant_for(scenario: TaskScenario) -> TaskPlant:
    """The planted effects of one ``tasks:`` entry (see the module doc)."""
    plant = PLANTS.lookup(scenario.task, f"task {scenario.id}")
    if scenario.task == "choice_k" and len(plant.base) != len(scenario.options):
        plant = TaskPlant(shift=plant.shift, invalid_rate=plant.invalid_rate)
    if dict(scenario.fields).get("valence") == "low":
        plant = TaskPlant(shift={g: -s for g, s in plant.shift.items()}, base=plant.base,
                          base_mean=plant.base_mean, noise_sd=plant.noise_sd,
                          position_bias=plant.position_bias,
                          invalid_rate=plant.invalid_rate)  # fmt: skip
    return plant
