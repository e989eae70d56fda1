"""Task types: the one registry of what a protocol scenario may ask.

``binary`` (:mod:`.binary`, the ``scenarios:`` list), ``choice_k`` (:mod:`.choice_k`),
``pairwise`` (:mod:`.pairwise`), ``numeric`` (:mod:`.numeric`) and ``text_only``
(:mod:`.text_only`); each is a :class:`~.base.TaskType` with its prompt builder, parser,
outcome space and scores, and says which engines can judge it. To add a task type, write its
module and add its instance to :data:`TASK_TYPES`.

:func:`check_protocol_tasks` checks every ``tasks:`` entry of a protocol against its type;
:func:`check_engine_tasks` fails in one line when a model's engine cannot judge a task the
protocol asks (compose time, ``stylisticbias.validate``).
"""

from __future__ import annotations

from collections.abc import Iterable

from stylisticbias.benchmark import Benchmark, Scenario, TaskScenario
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks import binary, choice_k, numeric, pairwise
from stylisticbias.judge.protocol.tasks.base import Answer, TaskPrompt, TaskType
from stylisticbias.judge.protocol.tasks.text_only import TextOnly

__all__ = [
    "TASK_TYPES",
    "Answer",
    "TaskPrompt",
    "TaskType",
    "check_engine_tasks",
    "check_protocol_tasks",
    "task_of",
    "task_prompts",
    "task_type",
]  # fmt: skip


def task_type(name: str, where: str = "task") -> TaskType:
    """The registered task type ``name``; unknown names list the valid ones."""
    try:
        return TASK_TYPES[name]
    except KeyError:
        raise StylisticBiasError(
            f"{where}: unknown task type {name!r}; valid: {', '.join(TASK_TYPES)}"
        ) from None


#: Every task type by its ``task:`` name (the one place they are registered).
TASK_TYPES: dict[str, TaskType] = {
    t.name: t
    for t in (binary.TASK, choice_k.TASK, pairwise.TASK, numeric.TASK, TextOnly(task_type))
}


def task_of(scenario: TaskScenario | Scenario) -> TaskType:
    """The task type of a scenario (a ``scenarios:`` entry is ``binary``)."""
    if isinstance(scenario, Scenario):
        return TASK_TYPES["binary"]
    return task_type(scenario.task, f"task {scenario.id}")


def check_protocol_tasks(benchmark: Benchmark) -> None:
    """Every ``tasks:`` entry names a known task type and has what that type reads."""
    for i, t in enumerate(benchmark.tasks):
        where = f"{benchmark.source}: tasks[{i}] (id {t.id})"
        task_type(t.task, where).check(t, benchmark, where)


def check_engine_tasks(benchmark: Benchmark, engine: str, where: str) -> None:
    """Raise one line if engine ``engine`` cannot judge a task type the protocol asks."""
    check_protocol_tasks(benchmark)
    for name in benchmark.task_names:
        tt = task_type(name, benchmark.source)
        if engine not in tt.engines:
            able = ", ".join(sorted(tt.engines)) or "none"
            raise StylisticBiasError(
                f"{where}: engine {engine!r} cannot judge task type {name!r} of protocol "
                f"{benchmark.name or benchmark.source}; engines that can: {able}"
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
        for p in task_type(t.task, f"task {t.id}").prompts(t, benchmark)
    ]
