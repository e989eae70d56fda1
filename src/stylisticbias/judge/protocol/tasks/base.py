"""What a task type is: the parts of one kind of question every stage asks of it.

A *task type* is one way of asking a judge about an image and reading the answer: the paper's
binary forced choice (:mod:`.binary_choice`) is the first. It is one module holding a
:class:`TaskType` -- its prompt builder, its parser, the outcome space of one response and how
a cell's judgments become a score -- registered in one place (:mod:`.registry`). A protocol
names its task type (``task:`` in ``conf/benchmark/<name>.yaml``, default ``binary_choice``).
``docs/architecture.md`` walks through adding one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from stylisticbias.benchmark import Benchmark


@dataclass(frozen=True)
class TaskType:
    """One task type's parts (every callable is a plain function of its module).

    - ``outcomes``: what one response can be read as (``choice`` in JUDGMENTS);
    - ``readers``: the ``judge.parser`` values it understands (the first is the default);
    - ``prompts(benchmark, orderings, scenario_ids)``: every prompt of an image, in a fixed
      order (``PromptSpec``: scenario, ordering, text);
    - ``parse(text, rules)``: a finished response's label (None: invalid);
    - ``decide_prefix(text, finished, rules)``: the verdict an exact decoder may take early;
    - ``score_cells(judgments, benchmark, source=, k=, reader=)``: one score row per (model,
      image, scenario) with the columns ``phi``, ``phi_low``, ``phi_high``, ``phi_paper``,
      ``phi_exact``, ``n_valid``, ``n``, ``undecided``, ``simulated`` (the scores stage adds the
      dataset columns and the shifts ``delta``).
    """

    name: str
    outcomes: tuple[str, ...]
    readers: tuple[str, ...]
    prompts: Callable[[Benchmark, Sequence[int], Any], list[Any]]
    parse: Callable[..., Any]
    decide_prefix: Callable[..., Any]
    score_cells: Callable[..., pd.DataFrame]
