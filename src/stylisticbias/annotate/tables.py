"""The annotation table (``data/annotations/<annotator>/annotations.parquet``), pandera-checked."""

from __future__ import annotations

import json

import pandas as pd
import pandera.pandas as pa

from stylisticbias.annotate.questions import INVALID_REASONS, KINDS


def _reason_ok(s: pd.Series) -> pd.Series:
    return s.isna() | s.astype(str).str.split(":").str[0].isin(INVALID_REASONS)


def _probs_ok(s: pd.Series) -> pd.Series:
    def ok(x: object) -> bool:
        if x is None or (isinstance(x, float) and pd.isna(x)):
            return True
        d = json.loads(str(x))
        return (
            all(0.0 <= float(v) <= 1.0 for v in d.values())
            and abs(sum(map(float, d.values())) - 1.0) < 1e-6
        )

    return s.map(ok)


#: one row per (image, question) asked of one annotator
ANNOTATIONS = pa.DataFrameSchema(
    {
        "image_id": pa.Column(str),
        "annotator": pa.Column(str),
        "engine": pa.Column(str),
        "question_id": pa.Column(str),
        "kind": pa.Column(str, pa.Check.isin(list(KINDS))),
        "response": pa.Column(str, nullable=True),
        "answer": pa.Column(str, nullable=True),  # canonical JSON of the valid answer
        "valid": pa.Column(bool),
        "reason": pa.Column(str, pa.Check(_reason_ok, name="known_reason"), nullable=True),
        "probs": pa.Column(str, pa.Check(_probs_ok, name="distribution"), nullable=True),
    },
    checks=[
        pa.Check(lambda df: (df["valid"] == df["answer"].notna()).all(), name="valid_has_answer"),
        pa.Check(lambda df: (df["valid"] == df["reason"].isna()).all(), name="invalid_has_reason"),
    ],
    strict=True,
    coerce=True,
    unique=["image_id", "question_id"],
    name="annotations",
)

COLUMNS = list(ANNOTATIONS.columns)
