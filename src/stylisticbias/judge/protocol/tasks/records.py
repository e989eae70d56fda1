"""The records of a task protocol's judge run (``data/judgments/<model>/task_records.parquet``).

One row per (task, prompt variant, unit): a unit is one face (``choice_k``, ``numeric``) or
one ordered pair of faces (``pairwise`` and pairwise ``text_only``; ``unit`` is the instance
the pair belongs to, ``image_ids`` the two faces in slot order of variant 0).

Columns: ``model``; ``task_id``; ``task`` (the ``task:`` type); ``answers`` (the type that
scores it: ``task`` itself, or what a ``text_only`` entry wraps); ``variant`` (prompt variant:
for pairwise 0 = ``first`` in slot 1, 1 = swapped); ``unit``; ``image_ids`` (``|``-joined);
``first``/``second`` (the groups: ``second`` empty for single-image tasks); ``response`` (the
text); ``outcome`` (the parsed outcome: an option label, ``first``/``second``, ``value`` or
``invalid``); ``value`` (the number of a numeric answer, else NaN); ``dist`` (JSON: the exact
probability of every outcome of the task, ``invalid`` included, summing to 1; empty where the
task has no exact distribution -- a free number, or an answer generated rather than computed);
``reason`` (why the answer is invalid, one line; empty for a valid one); ``undecided`` (the
part of ``dist``'s ``invalid`` mass an exact decoder could not decide: pruned branches or the
tail a server's top log-probabilities do not show -- no option's mass is overstated; 0 for the
simulated judge and for generated answers); ``left_id``/``right_id`` (the image ids in slot 1
and slot 2 of the prompt as asked: the left and right person of a composite, the first and
second image input, the first and second person of a pairwise text-only description; empty
for single-image tasks) -- the position-bias table reads them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.protocol.tasks.scenario_task import TaskPrompt

#: column -> pandas dtype kind (``O`` text, ``i`` integer, ``f`` float)
TASK_RECORDS: dict[str, str] = {
    "model": "O",
    "task_id": "i",
    "task": "O",
    "answers": "O",
    "variant": "i",
    "unit": "O",
    "image_ids": "O",
    "first": "O",
    "second": "O",
    "response": "O",
    "outcome": "O",
    "value": "f",
    "dist": "O",
    "reason": "O",
    "undecided": "f",
    "left_id": "O",
    "right_id": "O",
}

RECORDS_FILE = "task_records.parquet"


def positions(image_ids: Sequence[str], prompt: TaskPrompt) -> dict[str, str]:
    """``left_id``/``right_id`` of a record: the unit's image ids (``first``, ``second``) in
    the prompt's slot order; empty for a single-image unit."""
    if len(image_ids) != 2:
        return {"left_id": "", "right_id": ""}
    by = dict(zip(("first", "second"), image_ids))
    slots = prompt.slots or ("first", "second")
    return {"left_id": by[slots[0]], "right_id": by[slots[1]]}


def validate_task_records(df: pd.DataFrame, path: Path | str) -> pd.DataFrame:
    """Check columns, dtypes and every exact distribution; one error line naming the row."""
    missing = [c for c in TASK_RECORDS if c not in df.columns]
    if missing:
        raise StylisticBiasError(
            f"{path}: missing column(s) {missing}; task records have {list(TASK_RECORDS)}"
        )
    for col, kind in TASK_RECORDS.items():
        if df[col].dtype.kind != kind and not (kind == "O" and df[col].dtype.kind in "OUT"):
            raise StylisticBiasError(
                f"{path}: column {col!r} has dtype {df[col].dtype}; expected kind {kind!r}"
            )
    for i, (out, why) in enumerate(zip(df["outcome"], df["reason"])):
        if (out == "invalid") != bool(why):
            raise StylisticBiasError(
                f"{path} row {i}: outcome {out!r} with reason {why!r}; an invalid answer has a "
                "reason and a valid one none"
            )
    read: dict[str, tuple[float, float, set[str]]] = {}  # a few distinct distributions
    for i, (out, dist) in enumerate(zip(df["outcome"], df["dist"])):
        if not dist:
            continue
        if dist not in read:
            probs = json.loads(dist)
            read[dist] = (sum(probs.values()), min(probs.values()), set(probs))
        total, least, outcomes = read[dist]
        if not math.isclose(total, 1.0, abs_tol=1e-9) or least < 0:
            raise StylisticBiasError(f"{path} row {i}: dist sums to {total}, not 1")
        if out not in outcomes:
            raise StylisticBiasError(
                f"{path} row {i}: outcome {out!r} not among the dist's {sorted(outcomes)}"
            )
    return df[list(TASK_RECORDS)]


def read_task_records(path: Path) -> pd.DataFrame:
    """Read and validate one model's task records."""
    if not path.is_file():
        raise StylisticBiasError(f"{path}: no task records (run the judge stage first)")
    return validate_task_records(pd.read_parquet(path), path)
