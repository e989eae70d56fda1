"""pandera schemas for every table that crosses a stage boundary, declared once.

Column names follow DESIGN.md §5. The tables the ``analyze`` stage writes have their own
registry and vocabulary (:mod:`stylisticbias.analysis.table_registry`), validated with
:func:`validate` below. ``validate(df, schema, where)`` turns a pandera failure into
one :class:`StylisticBiasError` line naming the file, the column and the first bad row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaError, SchemaErrors

from stylisticbias.errors import StylisticBiasError

SCHEMA_VERSION = 1

_STATUS = ["ok", "refused", "blocked", "error"]
_DEMO = {
    "age": pa.Column(str),
    "gender": pa.Column(str),
    "ethnicity": pa.Column(str),
    "body_type": pa.Column(str),
}
_IMAGE = {
    "generator": pa.Column(str),
    "prompt": pa.Column(str),
    "seed": pa.Column("int64"),
    "path": pa.Column(str, nullable=True),  # relative to the table's directory; null if not ok
    "sha256": pa.Column(str, pa.Check.str_matches(r"^[0-9a-f]{64}$"), nullable=True),
    "width": pa.Column("Int64", nullable=True),
    "height": pa.Column("Int64", nullable=True),
    "status": pa.Column(str, pa.Check.isin(_STATUS)),
    "reason": pa.Column(str, nullable=True),  # refusal / block / error message
    "evaluated": pa.Column(bool),
}

#: ``data/faces/faces.parquet`` -- one row per base identity.
FACES = pa.DataFrameSchema(
    {
        "face_id": pa.Column(str, unique=True),
        "image_id": pa.Column(str, unique=True),
        **_DEMO,
        **_IMAGE,
    },
    strict=True,
    coerce=True,
    name="faces",
)

#: ``data/variations/variations.parquet`` -- one row per single-attribute edit.
VARIATIONS = pa.DataFrameSchema(
    {
        "image_id": pa.Column(str, unique=True),
        "face_id": pa.Column(str),
        "category": pa.Column(str),
        "attribute": pa.Column(str),
        "value": pa.Column(str),
        "framing": pa.Column(str, pa.Check.isin(["face", "full_body"])),
        **_DEMO,
        **_IMAGE,
    },
    strict=True,
    coerce=True,
    unique=["face_id", "attribute", "value"],
    name="variations",
)

_PROB = pa.Check.in_range(0.0, 1.0)

#: ``data/judgments/<model>/*.parquet`` -- answer records.
#: ``seed`` = 0 marks an ``exact`` expectation row (no drawn response); seeds >= 1 are drawn or
#: generated responses with ``response``/``choice`` set. ``p_*`` always hold the outcome
#: distribution (one-hot for ``generate``); ``p_undecided`` is mass pruned before the parser
#: could decide.
JUDGMENTS = pa.DataFrameSchema(
    {
        "image_id": pa.Column(str),
        "face_id": pa.Column(str),
        "model": pa.Column(str),
        "engine": pa.Column(str),
        "decoding": pa.Column(str, pa.Check.isin(["generate", "sampled", "exact", "simulated"])),
        "scenario_id": pa.Column("int64", pa.Check.in_range(1, 10_000)),
        "ordering": pa.Column("int64", pa.Check.in_range(1, 4)),
        "seed": pa.Column("int64", pa.Check.ge(0)),
        "response": pa.Column(str, nullable=True),
        "choice": pa.Column(str, pa.Check.isin(["positive", "negative", "invalid"]), nullable=True),
        "p_pos": pa.Column(float, _PROB),
        "p_neg": pa.Column(float, _PROB),
        "p_invalid": pa.Column(float, _PROB),
        "p_undecided": pa.Column(float, _PROB),
        "simulated": pa.Column(bool),
    },
    strict=True,
    coerce=True,
    unique=["image_id", "model", "scenario_id", "ordering", "seed"],
    name="judgments",
)

#: ``data/scores/model=<model>/part-0.parquet`` (Hive partition, ``score_store``) -- phi per
#: image x scenario; delta for variations.
SCORES = pa.DataFrameSchema(
    {
        "model": pa.Column(str),
        "image_id": pa.Column(str),
        "face_id": pa.Column(str),
        "is_base": pa.Column(bool),
        "category": pa.Column(str, nullable=True),  # null on base faces
        "attribute": pa.Column(str, nullable=True),
        "value": pa.Column(str, nullable=True),
        **_DEMO,
        "scenario_id": pa.Column("int64"),
        "scenario_category": pa.Column(str),
        "phi": pa.Column(float, _PROB, nullable=True),  # null when no valid response
        "n_valid": pa.Column(float, pa.Check.ge(0)),  # expected count for exact decoding
        "n": pa.Column("int64", pa.Check.ge(0)),  # responses asked (orderings x seeds)
        "delta": pa.Column(float, pa.Check.in_range(-1.0, 1.0), nullable=True),  # null on base
        "simulated": pa.Column(bool),
        # undecided (pruned) mass: mean per ordering; phi/delta range had it gone either way;
        # rows above judge.undecided_max are excluded (phi null, flag true). Optional: a table
        # written before they existed reads as zero undecided mass.
        "undecided": pa.Column(float, _PROB, required=False),
        "undecided_excluded": pa.Column(bool, required=False),
        "phi_low": pa.Column(float, _PROB, nullable=True, required=False),
        "phi_high": pa.Column(float, _PROB, nullable=True, required=False),
        "delta_low": pa.Column(float, pa.Check.in_range(-1.0, 1.0), nullable=True, required=False),
        "delta_high": pa.Column(float, pa.Check.in_range(-1.0, 1.0), nullable=True, required=False),
        # the paper's 12-draw estimator and the exact expectation side by side (scores docstring)
        "phi_paper": pa.Column(float, _PROB, nullable=True, required=False),
        "phi_exact": pa.Column(float, _PROB, nullable=True, required=False),
        "delta_paper": pa.Column(
            float, pa.Check.in_range(-1.0, 1.0), nullable=True, required=False
        ),
        "delta_exact": pa.Column(
            float, pa.Check.in_range(-1.0, 1.0), nullable=True, required=False
        ),
    },
    strict=True,
    coerce=True,
    unique=["model", "image_id", "scenario_id"],
    name="scores",
)


#: annotation question kinds and the reasons an answer is invalid (stylisticbias.annotate)
ANNOTATION_KINDS = ("categorical", "multi_label", "yes_no", "free")
ANNOTATION_INVALID_REASONS = ("refusal", "malformed_json", "outside_schema")


def _reason_ok(s: pd.Series) -> pd.Series:
    return s.isna() | s.astype(str).str.split(":").str[0].isin(ANNOTATION_INVALID_REASONS)


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
        "kind": pa.Column(str, pa.Check.isin(list(ANNOTATION_KINDS))),
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


def validate(df: pd.DataFrame, schema: pa.DataFrameSchema, where: str | Path) -> pd.DataFrame:
    """Validate ``df`` against ``schema``; on failure raise one line naming ``where`` and row."""
    try:
        return schema.validate(df, lazy=True)
    except SchemaErrors as exc:
        fc = exc.failure_cases
        row = fc.iloc[0]
        col = row.get("column") or "<table>"
        idx = row.get("index")
        check = row.get("check")
        case = row.get("failure_case")
        missing = [
            str(r["failure_case"])
            for _, r in fc.iterrows()
            if str(r.get("check")) == "column_in_dataframe"
        ]
        if missing:
            msg = f"missing column(s) {', '.join(missing)}"
        else:
            msg = f"column {col!r} fails {check} at row {idx} (value {case!r})"
        n = len(fc)
        more = f"; {n - 1} more failure(s)" if n > 1 else ""
        raise StylisticBiasError(
            f"{where}: does not match the {schema.name} schema v{SCHEMA_VERSION}: {msg}{more}"
        ) from None
    except SchemaError as exc:  # pragma: no cover - lazy=True raises SchemaErrors
        raise StylisticBiasError(
            f"{where}: does not match the {schema.name} schema: {exc}"
        ) from None


def read_table(path: str | Path, schema: pa.DataFrameSchema) -> pd.DataFrame:
    """Read a Parquet table and validate it; a missing or unreadable file is one clear error."""
    p = Path(path)
    if not p.exists():
        raise StylisticBiasError(f"{p}: not found (run the stage that writes it: `dvc repro`)")
    try:
        df = pd.read_parquet(p)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise StylisticBiasError(
            f"{p}: not a readable Parquet file ({type(exc).__name__})"
        ) from None
    return validate(df, schema, p)


def write_table(df: pd.DataFrame, path: str | Path, schema: pa.DataFrameSchema) -> Path:
    """Validate and write a Parquet table atomically (temp file + rename)."""
    p = Path(path)
    from stylisticbias.outputs import atomic_write_parquet

    return atomic_write_parquet(validate(df, schema, p), p)


def check_demographics(
    df: pd.DataFrame, demographics: Mapping[str, Sequence[str]], path: Path | str
) -> None:
    """Raise naming the first row whose age/gender/ethnicity/body type is not a benchmark value.

    The schemas check types; the values come from ``conf/benchmark`` (``benchmark.demographics``).
    """
    for col, valid in demographics.items():
        if col not in df.columns:
            continue
        bad = ~df[col].astype(str).isin([str(v) for v in valid]).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            face = df["face_id"].iloc[i] if "face_id" in df.columns else "?"
            raise StylisticBiasError(
                f"{path}: row {i} (face {face}): {col} {df[col].iloc[i]!r} is not a value of "
                f"conf/benchmark ({int(bad.sum())} such row(s)); valid: {', '.join(valid)}"
            )
