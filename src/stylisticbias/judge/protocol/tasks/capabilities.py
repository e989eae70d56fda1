"""What a judged model can be asked: the task types, image counts and decodings each engine
handles, checked once per model at compose time (``stylisticbias.validate``) and again when the
judge stage starts.

A model can judge a task scenario when

* its engine judges that task type at all (:attr:`ScenarioTask.engines
  <stylisticbias.judge.protocol.tasks.scenario_task.ScenarioTask.engines>`);
* each prompt's images fit the model: a ``pairwise`` task with ``layout: two_images`` sends two
  images in one prompt, so the model file must say ``max_images: 2`` or more (the default 1 is
  what every checkpoint takes); a composite is one image, a ``text_only`` prompt none;
* its decoding can produce the answer: ``decoding: exact`` computes distributions over labels and
  has none for a free number, so a ``numeric`` task needs ``generate`` or ``sampled`` (the
  latter computes the label tasks exactly and generates the numbers).

The simulated judge answers from planted effects: no image limit, no decoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stylisticbias.benchmark import Benchmark, TaskScenario
from stylisticbias.judge.protocol.tasks.scenario_task import ScenarioTask

#: decodings that compute an exact distribution and cannot give a free number
EXACT_ONLY = ("exact",)
#: the decodings that generate free text where a task has no exact distribution
GENERATING = ("generate", "sampled")
#: images one prompt may carry when the model file does not say (``max_images``)
DEFAULT_MAX_IMAGES = 1


def model_max_images(model: Mapping[str, Any]) -> int:
    """The most images one prompt of this model may carry (``max_images``, default 1)."""
    value = model.get("max_images")
    return DEFAULT_MAX_IMAGES if value is None else int(value)


#: the task types asked of a pair of identities (two people side by side), not of one face
PAIR_TASKS = ("pairwise", "factuality")


def answered_as(scenario: TaskScenario) -> str:
    """The task type that reads the answers (what a ``text_only`` entry wraps, else itself)."""
    return scenario.answers if scenario.task == "text_only" else scenario.task


def asks_pair(scenario: TaskScenario) -> bool:
    """Whether the scenario is asked of a pair of identities (:data:`PAIR_TASKS`)."""
    return answered_as(scenario) in PAIR_TASKS


def unsupported(
    task: ScenarioTask,
    scenario: TaskScenario,
    benchmark: Benchmark,
    engine: str,
    model: Mapping[str, Any],
) -> str | None:
    """Why ``model`` (its section of ``params.yaml``, engine ``engine``) cannot judge
    ``scenario``, naming the valid choices; None when it can."""
    if engine not in task.engines:
        able = ", ".join(sorted(task.engines)) or "none"
        return f"engine {engine!r} cannot judge task type {task.name!r}; engines that can: {able}"
    if engine == "simulated":
        return None
    shown = max((p.images for p in task.prompts(scenario, benchmark)), default=0)
    most = model_max_images(model)
    if shown > most:
        return (
            f"task type {task.name!r} (layout {scenario.layout}) shows {shown} images in one "
            f"prompt; this engine {engine!r} model takes at most {most} (max_images: {most}); "
            f"valid: layout: composite, or max_images: {shown} or more in the model file"
        )
    decoding = str((model.get("engine") or {}).get("decoding") or "")
    if answered_as(scenario) == "numeric" and decoding in EXACT_ONLY:
        return (
            f"engine {engine!r} with decoding {decoding!r} cannot judge task type "
            f"{scenario.task!r} (a free number has no exact distribution); valid decodings: "
            f"{', '.join(GENERATING)}"
        )
    return None
