"""VIGNETTE (``paradigm: vignette``): two people side by side, asked who fits a term, a
perception or a decision, and the decisions again without the image (text only). Pairwise
tasks make position bias only (the win-rate tables are REFLECT's); the stereotyping tasks
(``fields``: ``term``, ``valence``, ``pair``) make the selection tables; a text-only task is
compared with its image twin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stylisticbias.families.tasks.paradigm import Paradigm

if TYPE_CHECKING:
    from stylisticbias.benchmark import Benchmark, TaskScenario

#: the category of a text-only question: its image question's, after this prefix
#: (``Text-only decision ability`` <-> ``Decision ability``; conf/benchmark/vignette.yaml)
TEXT_ONLY_PREFIX = "Text-only "


def image_twin(task: TaskScenario, benchmark: Benchmark) -> TaskScenario | None:
    """The pairwise image task asking the same question as text-only ``task``: the same
    ``fields`` (activity) and its category without :data:`TEXT_ONLY_PREFIX`."""
    rest = task.category.removeprefix(TEXT_ONLY_PREFIX)
    if rest == task.category or not rest:
        return None
    want = rest[0].upper() + rest[1:]
    for t in benchmark.tasks:
        if t.task == "pairwise" and t.category == want and t.fields == task.fields:
            return t
    return None


PARADIGM = Paradigm(
    name="vignette",
    pairwise_tables=("task_position_bias",),
    selection_tables=True,
    image_twin=image_twin,
)
