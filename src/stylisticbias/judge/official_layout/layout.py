"""The released code's raw layout: one JSON file per call, named by image, scenario *index*,
order and seed; the row our export adds to it (``stylisticbias``), the judgments table's
columns and what an import keeps of each file besides (``released.parquet``).

The released spellings (scenario index, poles, values, prompt) come from the protocol's
``released:`` section (:mod:`stylisticbias.benchmark.released`); a protocol without one is
written in its own spelling (index = position in the file).
"""

from __future__ import annotations

import pyarrow as pa

from stylisticbias.benchmark import Benchmark, Ordering, Scenario
from stylisticbias.benchmark.released import ReleasedSpec

UNKNOWN = "unknown"
EXTRA = "stylisticbias"
ENGINE = "official"  # the engine column of a row imported from the released code
#: the judgments table's columns, in order, with their Arrow types
COLUMNS: dict[str, pa.DataType] = {
    "image_id": pa.string(),
    "face_id": pa.string(),
    "model": pa.string(),
    "engine": pa.string(),
    "decoding": pa.string(),
    "scenario_id": pa.int64(),
    "ordering": pa.int64(),
    "seed": pa.int64(),
    "response": pa.string(),
    "choice": pa.string(),
    "p_pos": pa.float64(),
    "p_neg": pa.float64(),
    "p_invalid": pa.float64(),
    "p_undecided": pa.float64(),
    "simulated": pa.bool_(),
}
SCHEMA = pa.schema(list(COLUMNS.items()))
#: the fields the released code's ``write_result`` writes, in its order
RELEASED_FIELDS = (
    "face_image_name",
    "characteristics",
    "order",
    "seed",
    "prompt",
    "timestamp",
    "options",
    "chosen_option",
    "raw_output",
)
#: a row's key in the judgments table
KEYS = ("model", "image_id", "scenario_id", "ordering", "seed")
#: what an import keeps of each file that its row cannot give back (``released.parquet``): the
#: folder names, and the released fields as written (``characteristics`` as JSON text)
META: dict[str, pa.DataType] = {
    "face_dir": pa.string(),
    "image_dir": pa.string(),
    "face_image_name": pa.string(),
    "characteristics": pa.string(),
    "timestamp": pa.string(),
    "prompt": pa.string(),
    "chosen_option": pa.string(),
}
META_SCHEMA = pa.schema([(k, COLUMNS[k]) for k in KEYS] + list(META.items()))


def file_name(image: str, index: int, ordering: int, seed: int) -> str:
    """The released code's file name of one call (``index``: the released scenario index)."""
    return f"{image}_scenario{index}_order{ordering}_seed{seed}.json"


def released_of(benchmark: Benchmark) -> ReleasedSpec:
    """The protocol's released spellings (its own where it has no ``released:`` section)."""
    return benchmark.released or ReleasedSpec.identity(benchmark.scenario_ids)


def options(benchmark: Benchmark, scenario: Scenario, ordering: Ordering) -> tuple[str, str]:
    """``(text of (a), text of (b))`` as the released code writes ``options``."""
    rel = benchmark.released
    if rel is None:
        a, b = benchmark.options_shown(scenario, ordering)[:2]
        return a, b
    a, b = (rel.pole(scenario.pole(ordering.pole_of(x))) for x in benchmark.letters[:2])
    return a, b


def prompt(benchmark: Benchmark, scenario: Scenario, ordering: Ordering) -> str:
    """The prompt text the released code sends (and writes) for one scenario and ordering."""
    rel = benchmark.released
    if rel is None or not rel.prompt:
        return benchmark.forced_choice_prompt(scenario, ordering)
    (l1, p1), (l2, p2) = ordering.slots
    return rel.prompt.format(
        letter_1=l1,
        option_1=rel.pole(scenario.pole(p1)),
        letter_2=l2,
        option_2=rel.pole(scenario.pole(p2)),
    )
