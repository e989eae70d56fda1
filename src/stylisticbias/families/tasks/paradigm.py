"""What differs between the task protocols of the family (``paradigm:`` of a protocol file):
a :class:`Paradigm` per module (:mod:`.reflect`, :mod:`.vignette`), declared once in the
family's ``FAMILY.paradigms``; the task tables
(:mod:`stylisticbias.families.tasks.analysis.records`) ask the protocol's paradigm,
never the shape of its tasks or their display text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stylisticbias.benchmark import Benchmark, TaskScenario

#: how a text-only task finds the image task asking the same question (None: it has none)
ImageTwin = Callable[["TaskScenario", "Benchmark"], "TaskScenario | None"]


@dataclass(frozen=True)
class Paradigm:
    """One paradigm of the task family: which tables its tasks make."""

    name: str
    #: the tables of every pairwise task it keeps (of ``task_tables.pairwise_tables``)
    pairwise_tables: tuple[str, ...]
    #: stereotyping questions: a pairwise task whose ``fields`` name a ``term`` (its
    #: ``valence``, high/low, and its trait ``pair``) feeds the selection tables
    #: (``vignette_selection``, ``vignette_log_odds``, ``vignette_pair_comp``,
    #: ``vignette_polarity``)
    selection_tables: bool = False
    #: a text-only task's image twin (``vignette_text_vs_image``); None: no text-only tables
    image_twin: ImageTwin | None = None
