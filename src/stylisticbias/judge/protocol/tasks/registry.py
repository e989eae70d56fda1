"""The task types a protocol may name (``task:`` in ``conf/benchmark/<name>.yaml``) and the
task types of its ``tasks:`` entries.

This is the one place a task type is registered: a protocol-level one (the stage-facing
:class:`~.base.TaskType`: prompts, parser, scores of the whole protocol) in
:data:`TASK_TYPES`; a scenario-level one (a :class:`~.scenario_task.ScenarioTask`:
``binary_choice``, ``choice_k``, ``pairwise``, ``numeric``, ``factuality``, ``text_only``, each
one module with its prompt builder, parser, outcome space, exact-decoder labels and per-cell
scores) in
:data:`SCENARIO_TASKS`. :func:`check_protocol_tasks` checks every ``tasks:`` entry against its
type; :func:`check_engine_tasks` fails in one line when a model's engine cannot judge a task the
protocol asks (compose time, ``stylisticbias.validate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stylisticbias.benchmark import DEFAULT_TASK, Benchmark, Scenario, TaskScenario
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks import (
    binary_scenario,
    choice_k,
    factuality,
    numeric,
    pairwise,
)
from stylisticbias.judge.protocol.tasks.base import TaskType
from stylisticbias.judge.protocol.tasks.binary_choice import BINARY_CHOICE
from stylisticbias.judge.protocol.tasks.capabilities import unsupported
from stylisticbias.judge.protocol.tasks.scenario_task import Answer, ScenarioTask, TaskPrompt
from stylisticbias.judge.protocol.tasks.text_only import TextOnly
from stylisticbias.registry import Registry

__all__ = [
    "SCENARIO_TASKS",
    "TASK_TYPES",
    "Answer",
    "ScenarioTask",
    "TaskPrompt",
    "TaskType",
    "check_engine_tasks",
    "check_protocol_tasks",
    "scenario_task",
    "task_of",
    "task_prompts",
    "task_type",
]

#: name -> task type
TASK_TYPES: Registry[TaskType] = Registry("task type", {t.name: t for t in (BINARY_CHOICE,)})


def task_type(name: str) -> TaskType:
    """The registered task type ``name``; an unknown name is one error line listing the valid."""
    return TASK_TYPES.lookup(name, "protocol task")


def scenario_task(name: str, where: str = "task") -> ScenarioTask:
    """The registered scenario task type ``name``; unknown names list the valid ones."""
    return SCENARIO_TASKS.lookup(name, where)


#: Every scenario task type by its ``task:`` name in a ``tasks:`` entry.
SCENARIO_TASKS: Registry[ScenarioTask] = Registry(
    "task type",
    {
        t.name: t
        for t in (
            binary_scenario.TASK,
            choice_k.TASK,
            pairwise.TASK,
            numeric.TASK,
            factuality.TASK,
            TextOnly(scenario_task),
        )
    },
)


def task_of(scenario: TaskScenario | Scenario) -> ScenarioTask:
    """The task type of a scenario (a ``scenarios:`` entry is ``binary_choice``)."""
    if isinstance(scenario, Scenario):
        return SCENARIO_TASKS[DEFAULT_TASK]
    return scenario_task(scenario.task, f"task {scenario.id}")


def check_protocol_tasks(benchmark: Benchmark) -> None:
    """Every ``tasks:`` entry names a known task type and has what that type reads."""
    for i, t in enumerate(benchmark.tasks):
        where = f"{benchmark.source}: tasks[{i}] (id {t.id})"
        scenario_task(t.task, where).check(t, benchmark, where)


def check_engine_tasks(
    benchmark: Benchmark,
    engine: str,
    where: str,
    model: Mapping[str, Any] | None = None,
    ids: Iterable[int] | str | None = None,
) -> None:
    """Raise one line if engine ``engine`` cannot judge a task the protocol asks: its task type,
    the images of its prompts or the model's decoding (:mod:`.capabilities`; ``model``: the
    model's section of ``params.yaml``, its ``max_images`` and ``engine.decoding`` read;
    ``ids``: the judged tasks, ``judge.scenarios``, None or ``all`` for every task)."""
    check_protocol_tasks(benchmark)
    mixed = [n for n in benchmark.task_names if n != DEFAULT_TASK] if benchmark.scenarios else []
    if mixed:  # the judge stage routes them only in a protocol of tasks alone
        raise StylisticBiasError(
            f"{where}: protocol {benchmark.name or benchmark.source} asks task type(s) "
            f"{', '.join(sorted(set(mixed)))} beside scenarios:; the judge stage judges them "
            "only in a protocol without scenarios: (e.g. conf/benchmark/reflect.yaml)"
        )
    if benchmark.scenarios and engine not in SCENARIO_TASKS[DEFAULT_TASK].engines:
        able = ", ".join(sorted(SCENARIO_TASKS[DEFAULT_TASK].engines))
        raise StylisticBiasError(
            f"{where}: engine {engine!r} cannot judge task type {DEFAULT_TASK!r} of protocol "
            f"{benchmark.name or benchmark.source}; engines that can: {able}"
        )
    wanted = None if ids is None or isinstance(ids, str) else {int(i) for i in ids}
    for sc in benchmark.tasks:
        if wanted is not None and sc.id not in wanted:
            continue
        why = unsupported(task_of(sc), sc, benchmark, engine, model or {})
        if why:
            raise StylisticBiasError(
                f"{where}: task {sc.id} ({sc.category}) of protocol "
                f"{benchmark.name or benchmark.source}: {why}"
            )


def task_prompts(
    benchmark: Benchmark, ids: Iterable[int] | None = None
) -> list[tuple[TaskScenario, TaskPrompt]]:
    """Every prompt of the protocol's ``tasks:`` entries (``ids``: a subset), task order."""
    wanted = None if ids is None else {int(i) for i in ids}
    return [
        (t, p)
        for t in benchmark.tasks
        if wanted is None or t.id in wanted
        for p in scenario_task(t.task, f"task {t.id}").prompts(t, benchmark)
    ]
