"""The task types a protocol may name (``task:`` in ``conf/benchmark/<name>.yaml``).

This is the one place a task type is registered: add its module's :class:`~.base.TaskType` to
:data:`TASK_TYPES`.
"""

from __future__ import annotations

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks.base import TaskType
from stylisticbias.judge.protocol.tasks.binary_choice import BINARY_CHOICE

#: name -> task type
TASK_TYPES: dict[str, TaskType] = {t.name: t for t in (BINARY_CHOICE,)}


def task_type(name: str) -> TaskType:
    """The registered task type ``name``; an unknown name is one error line listing the valid."""
    if name not in TASK_TYPES:
        raise StylisticBiasError(
            f"protocol task: {name!r}; valid: {', '.join(TASK_TYPES)} "
            "(judge/protocol/tasks/registry.py)"
        )
    return TASK_TYPES[name]
