"""The released code's raw layout: one JSON file per call, named by image, scenario, order and
seed; the row our export adds to it (``stylisticbias``) and the judgments table's columns.
"""

from __future__ import annotations

import pyarrow as pa

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


def file_name(image: str, scenario: int, ordering: int, seed: int) -> str:
    """The released code's file name of one call."""
    return f"{image}_scenario{scenario}_order{ordering}_seed{seed}.json"
